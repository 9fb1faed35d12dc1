package idp

import (
	"testing"

	"github.com/mcpmesh/gateway/shared/config"
)

func TestIdentityFrom_EmailTrustedOnlyWhenVerified(t *testing.T) {
	t.Parallel()
	requires := config.Provider{Name: "oidc"}
	vouches := config.Provider{Name: "verifies-everything", EmailVerifiedWithoutClaim: true}
	const addr = "a@example.com"
	cases := []struct {
		name     string
		verified any // nil: claim absent
		absent   bool
		provider config.Provider
		want     string
	}{
		{"true", true, false, requires, addr},
		{"string true", "true", false, requires, addr},
		{"string TRUE", "TRUE", false, requires, addr},
		{"string True", "True", false, requires, addr},
		{"false", false, false, requires, ""},
		{"string false", "false", false, requires, ""},
		{"other string", "yes", false, requires, ""},
		{"number", 1.0, false, requires, ""},
		{"null", nil, false, requires, ""},
		{"absent, claim required", nil, true, requires, ""},
		{"absent, provider verifies every address", nil, true, vouches, addr},
		{"false at a provider that verifies every address", false, false, vouches, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			claims := map[string]any{"sub": "u", "email": addr}
			if !tc.absent {
				claims["email_verified"] = tc.verified
			}
			id := identityFrom(claims, tc.provider)
			if id.Email != tc.want {
				t.Errorf("Email = %q, want %q", id.Email, tc.want)
			}
			if _, ok := id.Claims["email"]; ok != (tc.want != "") {
				t.Errorf("Claims[email] present = %v, want %v", ok, tc.want != "")
			}
		})
	}
}

func TestProviders_EveryBuiltInRequiresEmailVerified(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"oidc", "google", "gitlab", "apple", "auth0", "azure", "cognito", "okta", "onelogin", "ping"} {
		p, ok := config.LookupProvider(name)
		if !ok {
			t.Errorf("%s: not in the provider table", name)
			continue
		}
		if p.EmailVerifiedWithoutClaim {
			t.Errorf("%s trusts an address without email_verified", name)
		}
	}
	if p, _ := config.LookupProvider("github"); p.Protocol != config.ProtocolGitHub || p.Unavailable != "" {
		t.Error("github is not the GitHub connector's row")
	}
}
