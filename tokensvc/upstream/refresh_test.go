package upstream

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// connected returns an env whose alice has connected, and her first TI.
func connected(t *testing.T, style string) (*env, string) {
	t.Helper()
	e := newEnv(t, style, nil)
	sid := e.session("alice", "alice@example.com")
	if rec := e.connect(sid); rec.Code != http.StatusSeeOther {
		t.Fatalf("connect: %d %s", rec.Code, rec.Body.String())
	}
	ti, _, err := e.svc.Token(context.Background(), "alice", routeID)
	if err != nil {
		t.Fatal(err)
	}
	return e, ti
}

func TestToken_RefreshedBeforeExpiryAndRotatedTokenStoredBack(t *testing.T) {
	t.Parallel()
	e, first := connected(t, "params")
	// Well before expiry: no refresh, and the answer is cacheable until the refresh is due.
	ti, until, err := e.svc.Token(context.Background(), "alice", routeID)
	if err != nil || ti != first {
		t.Fatalf("fresh: %q %v", ti, err)
	}
	if want := e.clock.now().Add(time.Hour - RefreshMargin); until.Sub(want).Abs() > time.Second {
		t.Errorf("usable until %v, want about %v", until, want)
	}
	for i := 2; i <= 3; i++ {
		e.clock.add(time.Hour - RefreshMargin + time.Second)
		ti, _, err = e.svc.Token(context.Background(), "alice", routeID)
		if err != nil || ti == first || !strings.HasPrefix(ti, "at-") {
			t.Fatalf("refresh %d: %q %v", i, ti, err)
		}
		first = ti
	}
	// Each refresh token was presented exactly once: the rotated one was stored back.
	e.p.mu.Lock()
	for rt, n := range e.p.spent {
		if n != 1 {
			t.Errorf("refresh token %.10s… presented %d times", rt, n)
		}
	}
	if len(e.p.spent) != 2 {
		t.Errorf("%d refresh tokens spent, want 2", len(e.p.spent))
	}
	e.p.mu.Unlock()
	e.assertNoLeak()
}

func TestToken_NotRotatedRefreshTokenIsKept(t *testing.T) {
	t.Parallel()
	e, _ := connected(t, "header")
	e.p.rotate = false
	for range 3 {
		e.clock.add(time.Hour)
		if _, _, err := e.svc.Token(context.Background(), "alice", routeID); err != nil {
			t.Fatal(err)
		}
	}
	if len(e.p.spent) != 1 {
		t.Errorf("refresh tokens used: %v", e.p.spent)
	}
}

func TestToken_RevokedUpstreamDeletesTheTI(t *testing.T) {
	t.Parallel()
	e, _ := connected(t, "header")
	e.p.revokeAll("upstream-alice")
	e.clock.add(time.Hour - 30*time.Second) // due for refresh, still valid
	_, _, err := e.svc.Token(context.Background(), "alice", routeID)
	if !errors.Is(err, ErrUpstreamRequired) {
		t.Fatalf("after revocation: %v, want ErrUpstreamRequired", err)
	}
	if ok, _ := e.svc.Connected(context.Background(), "alice", routeID); ok {
		t.Error("still connected after the provider refused the refresh token")
	}
	if !strings.Contains(e.logs.String(), "error invalid_grant") {
		t.Errorf("log does not say invalid_grant:\n%s", e.logs.String())
	}
	e.assertNoLeak()
}

func TestToken_TransientFailureKeepsTheOldTIWhileValid(t *testing.T) {
	t.Parallel()
	e, first := connected(t, "header")
	e.p.hostile = func(w http.ResponseWriter, r *http.Request) bool {
		oauthError(w, 503, "temporarily_unavailable")
		return true
	}
	e.clock.add(time.Hour - 30*time.Second)
	ti, _, err := e.svc.Token(context.Background(), "alice", routeID)
	if err != nil || ti != first {
		t.Fatalf("while valid: %q %v, want the old TI", ti, err)
	}
	e.clock.add(time.Minute) // expired now
	_, _, err = e.svc.Token(context.Background(), "alice", routeID)
	if err == nil || errors.Is(err, ErrUpstreamRequired) {
		t.Fatalf("expired, provider down: %v, want a transient error", err)
	}
	if ok, _ := e.svc.Connected(context.Background(), "alice", routeID); !ok {
		t.Error("a transient failure removed the TI")
	}
	// The provider is back: the next request refreshes.
	e.p.mu.Lock()
	e.p.hostile = nil
	e.p.mu.Unlock()
	if ti, _, err = e.svc.Token(context.Background(), "alice", routeID); err != nil || ti == first {
		t.Fatalf("after recovery: %q %v", ti, err)
	}
}

func TestToken_SlowRefreshDoesNotHoldRequestsWhileTheTIIsValid(t *testing.T) {
	t.Parallel()
	e, first := connected(t, "header")
	release := make(chan struct{})
	e.p.hostile = func(w http.ResponseWriter, r *http.Request) bool {
		<-release
		return false
	}
	e.clock.add(time.Hour - 30*time.Second)
	start := time.Now()
	ti, _, err := e.svc.Token(context.Background(), "alice", routeID)
	if err != nil || ti != first {
		t.Fatalf("%q %v, want the old TI", ti, err)
	}
	if d := time.Since(start); d > refreshWait+500*time.Millisecond {
		t.Errorf("waited %s", d)
	}
	close(release)
	// The refresh completes on its own and is stored.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if ti, _, _ := e.svc.Token(context.Background(), "alice", routeID); ti != first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the refresh never landed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestToken_ExpiredWithoutRefreshTokenNeedsAConnect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "header", nil)
	if err := e.svc.SaveToken(context.Background(), "alice", routeID, Token{AccessToken: "ti", Expiry: e.clock.now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if ti, _, err := e.svc.Token(context.Background(), "alice", routeID); err != nil || ti != "ti" {
		t.Fatalf("valid: %q %v", ti, err)
	}
	e.clock.add(2 * time.Minute)
	if _, _, err := e.svc.Token(context.Background(), "alice", routeID); !errors.Is(err, ErrUpstreamRequired) {
		t.Fatalf("expired: %v", err)
	}
}
