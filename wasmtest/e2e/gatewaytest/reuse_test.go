package gatewaytest

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"golang.org/x/oauth2"
)

// concurrentRefreshStaysSignedIn is what a real MCP client does when several in-flight
// requests see the access token expire: each refreshes with the same refresh token. Within
// token_service.refresh_token_reuse_interval every one succeeds, all get one successor, and
// every access token passes the filter; after the interval the old token is a reuse.
func concurrentRefreshStaysSignedIn(t *testing.T, s *stack) {
	c := signIn(t, s, s.OpenURL)
	ctx := context.Background()
	const n = 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		got  []*oauth2.Token
		errs []error
	)
	for range n {
		wg.Go(func() {
			tok, err := c.refresh(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			got = append(got, tok)
		})
	}
	wg.Wait()
	if len(errs) > 0 || len(got) != n {
		t.Fatalf("%d of %d concurrent refreshes succeeded; errors %v", len(got), n, errs)
	}
	for _, tok := range got {
		if tok.RefreshToken != got[0].RefreshToken || tok.RefreshToken == c.Token.RefreshToken {
			t.Fatalf("concurrent refreshes got refresh tokens %q and %q (old %q), want one new successor", tok.RefreshToken, got[0].RefreshToken, c.Token.RefreshToken)
		}
		if r := mcpPost(t, s.OpenURL, tok.AccessToken, initialize); r.StatusCode != http.StatusOK {
			t.Fatalf("access token from a concurrent refresh: %d", r.StatusCode)
		}
	}
	// The successor rotates normally; the user is still signed in.
	next := &client{Config: c.Config, Token: got[0], Resource: c.Resource}
	third, err := next.refresh(ctx)
	if err != nil {
		t.Fatalf("refresh with the successor: %v", err)
	}
	// The first token again, past the interval: a reuse, and the family ends.
	s.advance(config.DefaultRefreshTokenReuseInterval + time.Second)
	if _, err := c.refresh(ctx); !isInvalidGrant(err) {
		t.Fatalf("old refresh token past the interval: %v, want invalid_grant", err)
	}
	if r := mcpPost(t, s.OpenURL, third.AccessToken, initialize); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("access token of the revoked family: %d, want 401", r.StatusCode)
	}
}
