package idp

// Red-team tests: a provider account with an email address it has not verified must not
// pass for that address anywhere policy can see it.

import (
	"context"
	"testing"

	"golang.org/x/oauth2"
)

func TestRedTeam_UnverifiedEmailReachesNoClaim(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		idToken, userinfo map[string]any
		mutate            func(map[string]any)
	}{
		// Policy criterion claim/email reads Identity.Claims: an attacker who registered
		// victim@example.com at a provider that does not verify addresses would pass
		// `claim/email: victim@example.com`.
		"ID token says unverified":        {idToken: map[string]any{"email": "victim@example.com", "email_verified": false}},
		"provider sends the string false": {idToken: map[string]any{"email": "victim@example.com", "email_verified": "false"}},
		// The ID token has no address; userinfo has one it marks unverified.
		"userinfo says unverified": {
			userinfo: map[string]any{"email": "victim@example.com", "email_verified": false},
			mutate:   func(c map[string]any) { delete(c, "email"); delete(c, "email_verified") },
		},
		// The ID token vouches for no address (email_verified without email); userinfo
		// brings an address it does not vouch for. The two must not be combined.
		"verification and address from different sources": {
			userinfo: map[string]any{"email": "victim@example.com", "email_verified": false},
			mutate:   func(c map[string]any) { delete(c, "email") },
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := newFakeProvider(t)
			for k, v := range tc.idToken {
				p.claims[k] = v
			}
			for k, v := range tc.userinfo {
				p.userinfo[k] = v
			}
			p.mutate = tc.mutate
			c := newTestConnector(t, p)
			v := oauth2.GenerateVerifier()
			id, _, err := c.Exchange(context.Background(), signIn(t, c, p, "mallory", "n", v), v, "n")
			if err != nil {
				t.Fatal(err)
			}
			if id.Email != "" {
				t.Errorf("Email = %q, want empty", id.Email)
			}
			if e, ok := id.Claims["email"]; ok {
				t.Errorf("Claims[email] = %v: an unverified address reaches claim/email policy criteria", e)
			}
		})
	}
}

// Attack: a provider that does not verify addresses, or one configured as generic oidc, sends
// an address without email_verified. An attacker who registered victim@example.com there
// would pass `email`/`domain` policy criteria and carry the address in the assertion. Without
// email_verified: true the address is not trusted (the generic provider requires the claim).
func TestRedTeam_EmailWithoutVerifiedClaimIsNotTrusted(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		idToken, userinfo map[string]any
		mutate            func(map[string]any)
	}{
		"ID token has no email_verified": {
			idToken: map[string]any{"email": "victim@example.com"},
			mutate:  func(c map[string]any) { delete(c, "email_verified") },
		},
		"email_verified is neither true nor \"true\"": {
			idToken: map[string]any{"email": "victim@example.com", "email_verified": "yes"},
		},
		"email_verified is a number": {
			idToken: map[string]any{"email": "victim@example.com", "email_verified": 1},
		},
		"userinfo address without email_verified": {
			userinfo: map[string]any{"email": "victim@example.com"},
			mutate:   func(c map[string]any) { delete(c, "email"); delete(c, "email_verified") },
		},
		// The ID token's address carries no verification; userinfo vouches for another
		// address (the user's real one). The two must not be combined.
		"userinfo vouches for another address": {
			idToken:  map[string]any{"email": "victim@example.com"},
			userinfo: map[string]any{"email": "mallory@example.com", "email_verified": true},
			mutate:   func(c map[string]any) { delete(c, "email_verified") },
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := newFakeProvider(t)
			for k, v := range tc.idToken {
				p.claims[k] = v
			}
			for k, v := range tc.userinfo {
				p.userinfo[k] = v
			}
			p.mutate = tc.mutate
			c := newTestConnector(t, p)
			v := oauth2.GenerateVerifier()
			id, _, err := c.Exchange(context.Background(), signIn(t, c, p, "mallory", "n", v), v, "n")
			if err != nil {
				t.Fatal(err)
			}
			if id.Email != "" {
				t.Errorf("Email = %q, want empty: the address is not verified", id.Email)
			}
			if e, ok := id.Claims["email"]; ok {
				t.Errorf("Claims[email] = %v: an unverified address reaches claim/email policy criteria", e)
			}
		})
	}
}
