// Parsers of what an upstream MCP server's authorization server says about itself:
// protected-resource metadata (RFC 9728 §2) and authorization server metadata (RFC 8414 §2);
// the Bearer challenge of a 401 is shared/wwwauth's. Each is bounded, refuses what it does
// not understand, and never panics (fuzz_discovery_test.go).

package upstream

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
)

// ResourceMetadata is the part of RFC 9728 protected-resource metadata the gateway uses.
type ResourceMetadata struct {
	Resource             string
	AuthorizationServers []string
	ScopesSupported      []string
}

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
// members of the wrong type) is an error saying which.
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
