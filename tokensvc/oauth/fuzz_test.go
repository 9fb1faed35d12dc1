package oauth

import (
	"github.com/mcpmesh/gateway/shared/redirecturi"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzValidateRedirectURI checks that whatever the redirect URI validator
// accepts is safe to redirect a browser to. Seeds: testdata/fuzz.
func FuzzValidateRedirectURI(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw string) {
		if validateRedirectURI(raw) != nil {
			if matchRedirectURI([]string{"http://127.0.0.1/cb"}, raw) && raw != "http://127.0.0.1/cb" {
				t.Fatalf("invalid %q matched a loopback registration", raw)
			}
			return
		}
		if strings.ContainsAny(raw, "#*\\ \t\r\n") {
			t.Fatalf("accepted %q with a fragment, wildcard, backslash or whitespace", raw)
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("accepted unparsable %q", raw)
		}
		if u.User != nil || u.Fragment != "" || u.Opaque != "" {
			t.Fatalf("accepted %q with userinfo, fragment or opaque part", raw)
		}
		switch scheme := strings.ToLower(u.Scheme); {
		case scheme == "https":
			if u.Hostname() == "" {
				t.Fatalf("accepted https %q without host", raw)
			}
		case scheme == "http":
			if !isLoopbackRedirectHost(u.Hostname()) {
				t.Fatalf("accepted http %q off loopback", raw)
			}
		case forbiddenRedirectSchemes[scheme] || len(scheme) < 2:
			t.Fatalf("accepted scheme %q", scheme)
		}
		if !matchRedirectURI([]string{raw}, raw) {
			t.Fatalf("%q does not match itself", raw)
		}
		// Appending the authorization response keeps the URI's origin.
		v, err := url.Parse(withQuery(raw, url.Values{"code": {"c"}, "iss": {"https://i"}}))
		if err != nil || v.Scheme != u.Scheme || v.Host != u.Host || v.Query().Get("code") != "c" {
			t.Fatalf("response URI for %q is %v (%v)", raw, v, err)
		}
	})
}

// FuzzParseClientMetadata checks the registration body parser: no panics,
// and everything it accepts satisfies the registration rules.
func FuzzParseClientMetadata(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		m, oerr := parseClientMetadata(body, authSecretBasic)
		if oerr != nil {
			if oerr.code != errInvalidClientMetadata && oerr.code != errInvalidRedirectURI {
				t.Fatalf("error code %q", oerr.code)
			}
			return
		}
		if len(m.RedirectURIs) == 0 || len(m.RedirectURIs) > maxRedirectURIs {
			t.Fatalf("accepted %d redirect URIs", len(m.RedirectURIs))
		}
		for _, u := range m.RedirectURIs {
			if err := validateRedirectURI(u); err != nil {
				t.Fatalf("accepted redirect URI %q: %v", u, err)
			}
		}
		if !slices.Contains(m.GrantTypes, grantAuthorizationCode) {
			t.Fatalf("grant types %v lack authorization_code", m.GrantTypes)
		}
		for _, g := range m.GrantTypes {
			if !slices.Contains(supportedGrantTypes, g) {
				t.Fatalf("accepted grant type %q", g)
			}
		}
		if !slices.Equal(m.ResponseTypes, []string{responseTypeCode}) {
			t.Fatalf("response types %v", m.ResponseTypes)
		}
		if !slices.Contains(supportedAuthMethods, m.TokenEndpointAuthMethod) {
			t.Fatalf("auth method %q", m.TokenEndpointAuthMethod)
		}
		if !utf8.ValidString(m.ClientName) || utf8.RuneCountInString(m.ClientName) > maxClientNameLen {
			t.Fatalf("client name %q", m.ClientName)
		}
		if _, ok := parseScope(m.Scope); !ok {
			t.Fatalf("scope %q", m.Scope)
		}
		for _, u := range m.RedirectURIs {
			if err := redirecturi.ValidateFor(u, m.ApplicationType); err != nil {
				t.Fatalf("accepted redirect URI %q for application_type %q: %v", u, m.ApplicationType, err)
			}
		}
		if m.TokenEndpointAuthMethod == authPrivateKeyJWT {
			if _, err := parseJWKSURI(m.JWKSURI); err != nil {
				t.Fatalf("private_key_jwt with jwks_uri %q: %v", m.JWKSURI, err)
			}
		} else if m.JWKSURI != "" {
			t.Fatalf("jwks_uri kept for %s", m.TokenEndpointAuthMethod)
		}
	})
}
