package oauth

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/secret"
)

// reuseOff turns the refresh token reuse interval off.
func reuseOff(c *config.Config) {
	off := config.Duration(0)
	c.TokenService.RefreshTokenReuseInterval = &off
}

// concurrentRefresh sends n refreshes of rt at once and returns the responses.
func concurrentRefresh(t *testing.T, n int, c registered, rt string, envs ...*env) ([]tokenResponse, []int) {
	t.Helper()
	var mu sync.Mutex
	var got []tokenResponse
	_, statuses := race(n, func(i int) int {
		rec := envs[i%len(envs)].token(c, refreshForm(rt))
		if rec.Code == http.StatusOK {
			mu.Lock()
			got = append(got, tokens(t, rec))
			mu.Unlock()
		}
		return rec.Code
	})
	return got, statuses
}

// A client that refreshes from several requests at once stays signed in: every request
// gets a new access token, and all of them the same successor refresh token, which then
// rotates normally.
func TestToken_ConcurrentRefreshWithinIntervalGetsSameSuccessor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	_, first := e.fullFlow(c, "alice")
	e.clock.Advance(time.Minute)

	got, failed := concurrentRefresh(t, 8, c, first.RefreshToken, e)
	if len(got) != 8 {
		t.Fatalf("%d of 8 concurrent refreshes succeeded (others %v), want all", len(got), failed)
	}
	seen := map[string]bool{}
	for _, tr := range got {
		if tr.RefreshToken != got[0].RefreshToken {
			t.Fatalf("concurrent refreshes got different refresh tokens %q and %q", tr.RefreshToken, got[0].RefreshToken)
		}
		if seen[tr.AccessToken] {
			t.Fatal("two refreshes got the same access token")
		}
		seen[tr.AccessToken] = true
		mustAccess(t, e, tr.AccessToken)
	}
	// A straggler inside the interval is served the same successor too.
	e.clock.Advance(config.DefaultRefreshTokenReuseInterval)
	if late := tokens(t, e.token(c, refreshForm(first.RefreshToken))); late.RefreshToken != got[0].RefreshToken {
		t.Fatal("a repeat at the end of the interval got another refresh token")
	}
	// The successor rotates normally, and the family stays live.
	third := tokens(t, e.token(c, refreshForm(got[0].RefreshToken)))
	mustAccess(t, e, third.AccessToken)
	mustAccess(t, e, got[0].AccessToken)

	// The first token presented once the interval is over: reuse, the family dies.
	e.clock.Advance(time.Millisecond)
	wantOAuthError(t, e.token(c, refreshForm(first.RefreshToken)), 400, errInvalidGrant)
	wantOAuthError(t, e.token(c, refreshForm(third.RefreshToken)), 400, errInvalidGrant)
	if _, err := e.srv.ValidateAccessToken(context.Background(), third.AccessToken, resMain); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("access token of a revoked family still valid: %v", err)
	}
}

// Attack: inside the interval, another client presents the rotated token. That is no
// concurrent refresh of the client it was issued to; the family is revoked.
func TestToken_ReuseByAnotherClientWithinIntervalRevokesFamily(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	thief := e.register(nil)
	_, first := e.fullFlow(c, "alice")
	second := tokens(t, e.token(c, refreshForm(first.RefreshToken)))
	wantOAuthError(t, e.token(thief, refreshForm(first.RefreshToken)), 400, errInvalidGrant)
	wantOAuthError(t, e.token(c, refreshForm(second.RefreshToken)), 400, errInvalidGrant)
	if _, err := e.srv.ValidateAccessToken(context.Background(), second.AccessToken, resMain); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("access token of a revoked family still valid: %v", err)
	}
}

// Attack: a rotated token presented after its successor was itself rotated, even inside
// the interval, is a replay: the family is revoked.
func TestToken_ReuseAfterSuccessorRotatedRevokesFamily(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	_, first := e.fullFlow(c, "alice")
	second := tokens(t, e.token(c, refreshForm(first.RefreshToken)))
	third := tokens(t, e.token(c, refreshForm(second.RefreshToken)))
	wantOAuthError(t, e.token(c, refreshForm(first.RefreshToken)), 400, errInvalidGrant)
	wantOAuthError(t, e.token(c, refreshForm(third.RefreshToken)), 400, errInvalidGrant)
}

// With the interval off (0s), the second use of a rotated token revokes at once.
func TestToken_ReuseIntervalOffRevokesAtOnce(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	reuseOff(cfg)
	e := newEnvWithConfig(t, cfg)
	c := e.register(nil)
	_, first := e.fullFlow(c, "alice")
	second := tokens(t, e.token(c, refreshForm(first.RefreshToken)))
	wantOAuthError(t, e.token(c, refreshForm(first.RefreshToken)), 400, errInvalidGrant)
	wantOAuthError(t, e.token(c, refreshForm(second.RefreshToken)), 400, errInvalidGrant)
}

// The successor is derived from the presented token under a key from shared_secret: a
// replica with the same secret derives the same one, another secret a different one,
// and it is no plain hash of the token.
func TestToken_SuccessorIsKeyedDerivation(t *testing.T) {
	t.Parallel()
	a, b := newEnv(t), newEnv(t)
	other := testConfig()
	other.SharedSecret = "YW5vdGhlci1zaGFyZWQtc2VjcmV0LW9mLTMyLWJ5dGU="
	c := newEnvWithConfig(t, other)
	raw := secret.NewToken()
	if a.srv.successorToken(raw) != b.srv.successorToken(raw) {
		t.Fatal("two replicas with one shared_secret derive different successors")
	}
	if a.srv.successorToken(raw) == c.srv.successorToken(raw) {
		t.Fatal("another shared_secret derives the same successor")
	}
	if a.srv.successorToken(raw) == a.srv.successorToken(secret.NewToken()) {
		t.Fatal("two tokens derive one successor")
	}
}

// Concurrent refreshes spread over two replicas on one database (SQLite file, and
// PostgreSQL when configured) all succeed with one successor; the family keeps one live
// refresh token.
func TestToken_ConcurrentRefreshAcrossReplicasKeepsOneSuccessor(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, r *replicas) {
		c := r.a.register(nil)
		sess := r.session(t, "alice")
		code, verifier := r.a.authorizeCode(c, sess, nil)
		first := tokens(t, r.a.token(c, codeForm(c, code, verifier)))
		got, failed := concurrentRefresh(t, 6, c, first.RefreshToken, r.a, r.b)
		if len(got) != 6 {
			t.Fatalf("%d of 6 concurrent refreshes succeeded (others %v), want all", len(got), failed)
		}
		for _, tr := range got {
			if tr.RefreshToken != got[0].RefreshToken {
				t.Fatal("replicas handed out different successors")
			}
			for _, e := range []*env{r.a, r.b} {
				if _, err := e.srv.ValidateAccessToken(context.Background(), tr.AccessToken, resMain); err != nil {
					t.Errorf("access token refused: %v", err)
				}
			}
		}
		tokens(t, r.b.token(c, refreshForm(got[0].RefreshToken)))
	})
}
