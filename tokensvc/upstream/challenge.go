// Parsers of what an upstream MCP server and its authorization server say about themselves:
// the Bearer challenge of a 401 (RFC 6750 §3, RFC 9728 §5.1), protected-resource metadata
// (RFC 9728 §2) and authorization server metadata (RFC 8414 §2). Each is bounded, refuses
// what it does not understand, and never panics (fuzz_discovery_test.go).

package upstream

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
)

// maxChallengeLen bounds the WWW-Authenticate value parsed.
const maxChallengeLen = 8 << 10

// Challenge is what a Bearer challenge of an upstream asks of its clients.
type Challenge struct {
	ResourceMetadata string // resource_metadata: the protected-resource metadata URL
	Scope            string // scope: the scopes the request needs
	Error            string // error: invalid_token, insufficient_scope, …
}

// ParseChallenge reads the Bearer challenge among the challenges of a WWW-Authenticate value
// (RFC 9110 §11.6.1: scheme, then comma-separated auth-params whose values are tokens or
// quoted strings). ok is false when there is no Bearer challenge or the value is malformed.
func ParseChallenge(v string) (c Challenge, ok bool) {
	if len(v) > maxChallengeLen {
		return Challenge{}, false
	}
	p := challengeParser{s: v}
	for {
		p.skip(" \t,")
		if p.done() {
			return c, ok
		}
		scheme := p.token()
		if scheme == "" {
			return Challenge{}, false
		}
		bearer := strings.EqualFold(scheme, "Bearer")
		if bearer && ok {
			return Challenge{}, false // two Bearer challenges: which one counts is unclear
		}
		ok = ok || bearer
		// auth-params until the next scheme (a token not followed by "=") or the end.
		for {
			p.skip(" \t")
			save := p.i
			if p.done() {
				break
			}
			if p.s[p.i] == ',' {
				p.i++
				continue
			}
			name := p.token()
			p.skip(" \t")
			if name == "" || p.done() || p.s[p.i] != '=' {
				p.i = save // a token68 or the next challenge's scheme
				if name == "" || !p.nextIsScheme() {
					return Challenge{}, false
				}
				break
			}
			p.i++
			p.skip(" \t")
			val, good := p.value()
			if !good {
				return Challenge{}, false
			}
			if !bearer {
				continue
			}
			switch strings.ToLower(name) {
			case "resource_metadata":
				c.ResourceMetadata = val
			case "scope":
				c.Scope = val
			case "error":
				c.Error = val
			}
		}
	}
}

type challengeParser struct {
	s string
	i int
}

func (p *challengeParser) done() bool { return p.i >= len(p.s) }

func (p *challengeParser) skip(set string) {
	for p.i < len(p.s) && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

// token reads an RFC 9110 token.
func (p *challengeParser) token() string {
	start := p.i
	for p.i < len(p.s) && isTchar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// nextIsScheme reports whether a new challenge starts at p.i: a token followed by space and
// an auth-param, a token68, or the end.
func (p *challengeParser) nextIsScheme() bool {
	q := challengeParser{s: p.s, i: p.i}
	if q.token() == "" {
		return false
	}
	return q.done() || q.s[q.i] == ' ' || q.s[q.i] == '\t' || q.s[q.i] == ','
}

// value reads a token or a quoted-string (with quoted-pairs) of printable ASCII.
func (p *challengeParser) value() (string, bool) {
	if p.done() {
		return "", false
	}
	if p.s[p.i] != '"' {
		v := p.token()
		return v, v != ""
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), true
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", false
			}
			c = p.s[p.i+1]
			p.i++
		}
		if (c < 0x20 && c != '\t') || c >= 0x7f {
			return "", false
		}
		b.WriteByte(c)
		p.i++
	}
	return "", false
}

func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// ResourceMetadata is the part of RFC 9728 protected-resource metadata the gateway uses.
type ResourceMetadata struct {
	Resource             string
	AuthorizationServers []string
	ScopesSupported      []string
}

// errMalformed marks a document that is not what its specification says.
var errMalformed = errors.New("malformed")

// ParseResourceMetadata reads protected-resource metadata: a JSON object whose resource is a
// URL and whose authorization_servers lists at least one; scopes_supported, when present, is
// a list of scope tokens.
func ParseResourceMetadata(body []byte) (ResourceMetadata, error) {
	var doc struct {
		Resource             *string  `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
	}
	if err := decodeObject(body, &doc); err != nil {
		return ResourceMetadata{}, err
	}
	if doc.Resource == nil || !absoluteURL(*doc.Resource) {
		return ResourceMetadata{}, errors.New("resource is missing or not an absolute URL")
	}
	if len(doc.AuthorizationServers) == 0 {
		return ResourceMetadata{}, errors.New("authorization_servers is missing or empty")
	}
	for _, a := range doc.AuthorizationServers {
		if !absoluteURL(a) {
			return ResourceMetadata{}, errors.New("authorization_servers holds something that is not an absolute URL")
		}
	}
	if !scopeTokens(doc.ScopesSupported) {
		return ResourceMetadata{}, errors.New("scopes_supported holds an invalid scope")
	}
	return ResourceMetadata{Resource: *doc.Resource, AuthorizationServers: doc.AuthorizationServers, ScopesSupported: doc.ScopesSupported}, nil
}

// ServerMetadata is the part of RFC 8414 (or OpenID discovery) metadata the gateway uses.
type ServerMetadata struct {
	Issuer                string
	AuthorizationEndpoint string
	TokenEndpoint         string
	RegistrationEndpoint  string
	ScopesSupported       []string
	TokenAuthMethods      []string
	// CIMD is client_id_metadata_document_supported.
	CIMD bool
	// IssParameter is authorization_response_iss_parameter_supported (RFC 9207).
	IssParameter bool
}

// ParseServerMetadata reads authorization server metadata: issuer, authorization_endpoint
// and token_endpoint are absolute URLs, code_challenge_methods_supported lists S256 (the MCP
// specification asks clients to refuse a server that does not say so), response_types_supported
// (when given) includes code.
func ParseServerMetadata(body []byte) (ServerMetadata, error) {
	var doc struct {
		Issuer                *string  `json:"issuer"`
		AuthorizationEndpoint string   `json:"authorization_endpoint"`
		TokenEndpoint         string   `json:"token_endpoint"`
		RegistrationEndpoint  string   `json:"registration_endpoint"`
		ScopesSupported       []string `json:"scopes_supported"`
		ResponseTypes         []string `json:"response_types_supported"`
		CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
		TokenAuthMethods      []string `json:"token_endpoint_auth_methods_supported"`
		CIMD                  bool     `json:"client_id_metadata_document_supported"`
		IssParameterSupported bool     `json:"authorization_response_iss_parameter_supported"`
	}
	if err := decodeObject(body, &doc); err != nil {
		return ServerMetadata{}, err
	}
	if doc.Issuer == nil || !absoluteURL(*doc.Issuer) {
		return ServerMetadata{}, errors.New("issuer is missing or not an absolute URL")
	}
	for _, f := range []struct{ name, v string }{
		{"authorization_endpoint", doc.AuthorizationEndpoint},
		{"token_endpoint", doc.TokenEndpoint},
	} {
		if !absoluteURL(f.v) {
			return ServerMetadata{}, errors.New(f.name + " is missing or not an absolute URL")
		}
	}
	if doc.RegistrationEndpoint != "" && !absoluteURL(doc.RegistrationEndpoint) {
		return ServerMetadata{}, errors.New("registration_endpoint is not an absolute URL")
	}
	if !slices.Contains(doc.CodeChallengeMethods, "S256") {
		return ServerMetadata{}, errors.New("code_challenge_methods_supported does not list S256 (PKCE)")
	}
	if doc.ResponseTypes != nil && !slices.Contains(doc.ResponseTypes, "code") {
		return ServerMetadata{}, errors.New("response_types_supported does not list code")
	}
	if !scopeTokens(doc.ScopesSupported) {
		return ServerMetadata{}, errors.New("scopes_supported holds an invalid scope")
	}
	return ServerMetadata{
		Issuer: *doc.Issuer, AuthorizationEndpoint: doc.AuthorizationEndpoint, TokenEndpoint: doc.TokenEndpoint,
		RegistrationEndpoint: doc.RegistrationEndpoint, ScopesSupported: doc.ScopesSupported,
		TokenAuthMethods: doc.TokenAuthMethods, CIMD: doc.CIMD, IssParameter: doc.IssParameterSupported,
	}, nil
}

// decodeObject decodes one JSON object into v: anything else (another type, trailing data,
// members of the wrong type) is errMalformed.
func decodeObject(body []byte, v any) error {
	body = []byte(strings.TrimSpace(string(body)))
	if len(body) == 0 || body[0] != '{' {
		return errors.New("not a JSON object")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errors.New("not valid JSON of the expected shape")
	}
	return nil
}

// absoluteURL reports whether s is an absolute http(s) URL with a host, without fragment or
// credentials, of printable ASCII.
func absoluteURL(s string) bool {
	if s == "" || len(s) > 2048 || !printable(s, false) {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" &&
		u.User == nil && u.Fragment == "" && u.Opaque == ""
}

// scopeTokens reports whether every element is an RFC 6749 scope-token.
func scopeTokens(ss []string) bool {
	if len(ss) > 256 {
		return false
	}
	for _, s := range ss {
		if s == "" || len(s) > 256 || !printable(s, false) || strings.ContainsAny(s, `"\`) {
			return false
		}
	}
	return true
}
