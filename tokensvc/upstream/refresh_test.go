package upstream

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
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

// replaceDown is a store whose ReplaceLeasedUpstreamToken fails while down is set: the
// database gone between the provider's answer to a refresh and the token service storing it.
type replaceDown struct {
	store.Store
	down atomic.Bool
}

func (r *replaceDown) ReplaceLeasedUpstreamToken(ctx context.Context, t store.UpstreamToken, holder string) error {
	if r.down.Load() {
		return errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	}
	return r.Store.ReplaceLeasedUpstreamToken(ctx, t, holder)
}

// The provider rotates refresh tokens: once it has answered a refresh, the stored refresh
// token is spent. A store failure at that moment must not lose the new one: the new TI is
// handed out, served to the next requests of this process without another refresh, and
// stored once the store is back, so the refresh after that works (no connect again).
func TestToken_StoreFailureAfterTheRefreshKeepsTheRotatedToken(t *testing.T) {
	t.Parallel()
	st := &replaceDown{Store: memory.New()}
	e := newEnv(t, "header", st)
	sid := e.session("alice", "alice@example.com")
	if rec := e.connect(sid); rec.Code != http.StatusSeeOther {
		t.Fatalf("connect: %d %s", rec.Code, rec.Body.String())
	}
	first, _, err := e.svc.Token(context.Background(), "alice", routeID)
	if err != nil {
		t.Fatal(err)
	}
	st.down.Store(true)
	e.clock.add(time.Hour - 30*time.Second) // due for refresh, still valid
	second, _, err := e.svc.Token(context.Background(), "alice", routeID)
	if err != nil || second == first {
		t.Fatalf("refresh with the store failing after the provider answered: %q %v, want the new TI", second, err)
	}
	if again, _, err := e.svc.Token(context.Background(), "alice", routeID); err != nil || again != second {
		t.Fatalf("next request while the store is down: %q %v, want the new TI without another refresh", again, err)
	}
	st.down.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, err := e.st.GetUpstreamToken(context.Background(), "alice", routeID, e.clock.now())
		if err == nil {
			if tok, err := e.svc.open(rec); err == nil && tok.AccessToken == second {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the refreshed TI was not stored after the store came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.clock.add(time.Hour - 30*time.Second)
	third, _, err := e.svc.Token(context.Background(), "alice", routeID)
	if err != nil || third == second {
		t.Fatalf("refresh after the store came back: %q %v, want a new TI", third, err)
	}
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	for rt, n := range e.p.spent {
		if n != 1 {
			t.Errorf("refresh token %.10s… presented %d times", rt, n)
		}
	}
}

// A check answer carrying a TI is cached until the TI is due, and its assertion has
// whole-second times: a TI due within the second would give an answer that cannot be signed
// (a 401 for the client). Within minUse of being due a TI is refreshed, and every TI handed
// out is good for at least minUse.
func TestToken_HandedOutForAtLeastMinUse(t *testing.T) {
	t.Parallel()
	for _, early := range []time.Duration{minUse + time.Second, minUse, time.Second, 100 * time.Millisecond} {
		e, first := connected(t, "header")
		e.clock.add(time.Hour - RefreshMargin - early) // due in `early`
		ti, until, err := e.svc.Token(context.Background(), "alice", routeID)
		if err != nil {
			t.Fatal(err)
		}
		if left := until.Sub(e.clock.now()); left < minUse {
			t.Errorf("due in %v: handed out a TI usable for %v, want at least %v", early, left, minUse)
		}
		if refreshed := ti != first; refreshed != (early <= minUse) {
			t.Errorf("due in %v: refreshed %t, want %t", early, refreshed, early <= minUse)
		}
	}
}
