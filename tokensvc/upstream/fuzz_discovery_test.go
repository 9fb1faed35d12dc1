package upstream

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseResourceMetadata: a document the parser accepts names an absolute resource URL,
// at least one authorization server URL and only valid scopes.
func FuzzParseResourceMetadata(f *testing.F) {
	f.Add(`{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://as.example.com"],"scopes_supported":["a"]}`)
	f.Add(`{"resource":"https://mcp.example.com","authorization_servers":[]}`)
	f.Add(`{"resource":1}`)
	f.Add(`[]`)
	f.Add(`{"resource":"javascript:alert(1)","authorization_servers":["https://a"]}`)
	f.Fuzz(func(t *testing.T, body string) {
		m, err := ParseResourceMetadata([]byte(body))
		if err != nil {
			return
		}
		if !absoluteURL(m.Resource) || len(m.AuthorizationServers) == 0 || !scopeTokens(m.ScopesSupported) {
			t.Fatalf("accepted %+v", m)
		}
		for _, a := range m.AuthorizationServers {
			if !absoluteURL(a) {
				t.Fatalf("accepted authorization server %q", a)
			}
		}
	})
}

// FuzzParseServerMetadata: a document the parser accepts has an issuer, absolute endpoint
// URLs, and PKCE S256.
func FuzzParseServerMetadata(f *testing.F) {
	f.Add(`{"issuer":"https://as.example.com","authorization_endpoint":"https://as.example.com/a","token_endpoint":"https://as.example.com/t","code_challenge_methods_supported":["S256"]}`)
	f.Add(`{"issuer":"https://as.example.com","authorization_endpoint":"https://as.example.com/a","token_endpoint":"https://as.example.com/t","registration_endpoint":"https://as.example.com/r","code_challenge_methods_supported":["S256"],"client_id_metadata_document_supported":true,"response_types_supported":["code"]}`)
	f.Add(`{"issuer":"https://as.example.com","code_challenge_methods_supported":["plain"]}`)
	f.Add(`{"issuer":null}`)
	f.Fuzz(func(t *testing.T, body string) {
		m, err := ParseServerMetadata([]byte(body))
		if err != nil {
			return
		}
		if !absoluteURL(m.Issuer) || !absoluteURL(m.AuthorizationEndpoint) || !absoluteURL(m.TokenEndpoint) ||
			(m.RegistrationEndpoint != "" && !absoluteURL(m.RegistrationEndpoint)) || !scopeTokens(m.ScopesSupported) {
			t.Fatalf("accepted %+v", m)
		}
	})
}

// FuzzParseRegistrationResponse: a registration the parser accepts has a printable client
// ID, a secret when its method needs one, and an error names nothing the server chose but a
// registered code.
func FuzzParseRegistrationResponse(f *testing.F) {
	f.Add(201, `{"client_id":"c","client_secret":"s","token_endpoint_auth_method":"client_secret_basic","client_secret_expires_at":0}`)
	f.Add(201, `{"client_id":"c","token_endpoint_auth_method":"none"}`)
	f.Add(400, `{"error":"invalid_redirect_uri","error_description":"secret-ish text"}`)
	f.Add(400, `{"error":"made up <b>"}`)
	f.Add(200, `{"client_id":"c","client_secret_expires_at":1}`)
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, status int, body string) {
		reg, expires, err := ParseRegistrationResponse(status, []byte(body), now)
		if err != nil {
			msg := err.Error()
			if strings.Contains(msg, "error ") {
				code := msg[strings.LastIndex(msg, "error ")+6:]
				if code != "unregistered" && !registeredRegistrationErrors[code] {
					t.Fatalf("error names %q", code)
				}
			}
			return
		}
		if reg.ClientID == "" || !printable(reg.ClientID, false) || !printable(reg.Secret, false) {
			t.Fatalf("accepted %+v", reg)
		}
		if (reg.AuthMethod == "client_secret_basic" || reg.AuthMethod == "client_secret_post") && reg.Secret == "" {
			t.Fatalf("method %s without a secret", reg.AuthMethod)
		}
		if !expires.IsZero() && !expires.After(now) {
			t.Fatalf("accepted an expired secret")
		}
	})
}
