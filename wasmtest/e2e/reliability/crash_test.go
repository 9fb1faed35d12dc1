package reliability

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/sqlite"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
)

// TestCrashDuringRefresh kills the token service (SIGKILL) after it has rotated a refresh
// token and before its answer leaves: a proxy in front of its public listener kills it when
// the answer starts to come back and drops the answer. The client sees 503 and retries with
// the refresh token it still has; within token_service.refresh_token_reuse_interval the
// restarted service answers with the successor the lost answer carried, so the user stays
// signed in, and the family still has one live refresh token.
func TestCrashDuringRefresh(t *testing.T) {
	bin := buildTokensvc(t)
	var rep *replica
	var front *harness.FaultProxy
	s := startStack(t, stackOptions{
		Remote: func(t *testing.T, s *rstack) gateway.TokenService {
			rep = newReplica(t, bin, s.YAML)
			rep.start(t)
			front = harness.StartFaultProxy(t, rep.public)
			ts, err := gateway.RemoteTokenService([]string{"http://" + front.Addr()}, []string{"http://" + rep.internal}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return ts
		},
	})
	c := s.signIn(t)
	tl := newTally("refresh with a crash between commit and answer")

	var armed atomic.Bool
	armed.Store(true)
	front.OnResponse(func() bool {
		if !armed.CompareAndSwap(true, false) {
			return false
		}
		rep.kill() // the rotation is committed: the answer is being written
		return true
	})
	crashed := time.Now()
	start := time.Now()
	st, code, _ := c.refreshStatus(c.Token.RefreshToken)
	tl.add(st, time.Since(start), false)
	if st != http.StatusServiceUnavailable {
		t.Fatalf("refresh whose answer was lost in a crash: %d %s, want 503", st, code)
	}
	front.OnResponse(nil)
	// The crash came after the commit: the store has the presented token rotated.
	if old := storedRefresh(t, s.SQLitePath, c.Token.RefreshToken); old.UsedAt.IsZero() {
		t.Fatal("the refresh token is not rotated in the store: the crash came before the commit")
	}
	rep.start(t)
	if d := time.Since(crashed); d >= config.DefaultRefreshTokenReuseInterval {
		t.Skipf("the restart took %v, longer than the reuse interval", d)
	}
	// The client retries with the token it has.
	start = time.Now()
	st, code, tr := c.refreshStatus(c.Token.RefreshToken)
	tl.add(st, time.Since(start), false)
	retried := time.Now()
	if st != http.StatusOK {
		t.Fatalf("retry after the crash: %d %s, want 200 (the user would be signed out)", st, code)
	}
	if got := mcp(s.MCPURL, tr.AccessToken); got != http.StatusOK {
		t.Fatalf("tool call after the retry: %d", got)
	}
	// The successor is the family's one live token: it rotates on.
	st, code, next := c.refreshStatus(tr.RefreshToken)
	tl.add(st, 0, false)
	if st != http.StatusOK {
		t.Fatalf("refresh with the successor: %d %s", st, code)
	}
	if got := mcp(s.MCPURL, next.AccessToken); got != http.StatusOK {
		t.Fatalf("tool call after the second refresh: %d", got)
	}
	report(t, tl)
	t.Logf("RELIABILITY %s: crash, restart and successful retry within %v", t.Name(), retried.Sub(crashed).Round(time.Millisecond))
}

// storedRefresh reads a refresh token from the SQLite file of a stopped token service.
func storedRefresh(t *testing.T, path, raw string) store.RefreshToken {
	t.Helper()
	st, err := sqlite.New(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt, _, err := st.GetRefreshToken(context.Background(), secret.Hash(raw), time.Now())
	if err != nil {
		t.Fatalf("stored refresh token: %v", err)
	}
	return rt
}
