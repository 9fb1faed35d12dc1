package oauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcpmesh/gateway/shared/redirecturi"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// Limits on client metadata. A registration is kept for up to 30 idle days
// and anyone may register, so each is bounded: the body, the number of
// redirect URIs, and every string kept (maxRedirectURILen bounds each
// redirect URI).
const (
	// maxRegistrationBodyBytes bounds a registration request's body, and so
	// what one registration can store.
	maxRegistrationBodyBytes = 16 << 10
	maxRedirectURIs          = 10
	maxClientNameLen         = 200 // runes
	maxScopeLen              = 1000
)

// clientMetadata is the registrable metadata of a client (RFC 7591 §2), as
// registered by DCR or read from a client ID metadata document. Fields this
// server does not use are ignored.
type clientMetadata struct {
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	ClientName              string   `json:"client_name"`
	Scope                   string   `json:"scope"`
	// ApplicationType is web, native or "" (OpenID Connect registration; shared/redirecturi
	// says what each allows).
	ApplicationType string `json:"application_type"`
	// JWKSURI is where a private_key_jwt client publishes its public keys; JWKS (keys by
	// value) is refused: only client ID metadata documents use private_key_jwt, and their
	// keys are fetched (assertion.go).
	JWKSURI string          `json:"jwks_uri"`
	JWKS    json.RawMessage `json:"jwks"`
}

// parseClientMetadata decodes a JSON object of client metadata and
// validates it with validateClientMetadata. defaultAuth is the
// token_endpoint_auth_method used when the document has none.
func parseClientMetadata(body []byte, defaultAuth string) (clientMetadata, *oauthError) {
	var m clientMetadata
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&m); err != nil {
		return m, newError(errInvalidClientMetadata, "the body is not a JSON object of client metadata: "+jsonProblem(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return m, newError(errInvalidClientMetadata, "unexpected data after the JSON object")
	}
	if e := validateClientMetadata(&m, defaultAuth); e != nil {
		return m, e
	}
	return m, nil
}

// jsonProblem describes a decoding error without echoing input.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return "field " + te.Field + " has the wrong type"
	}
	return "malformed JSON"
}

// validateClientMetadata validates m and fills in defaults, in place.
func validateClientMetadata(m *clientMetadata, defaultAuth string) *oauthError {
	if len(m.RedirectURIs) == 0 {
		return newError(errInvalidRedirectURI, "redirect_uris is required")
	}
	if len(m.RedirectURIs) > maxRedirectURIs {
		return newError(errInvalidRedirectURI, fmt.Sprintf("at most %d redirect_uris are allowed", maxRedirectURIs))
	}
	switch m.ApplicationType {
	case "", redirecturi.AppWeb, redirecturi.AppNative:
	default:
		return newError(errInvalidClientMetadata, "application_type must be web or native, got "+printable(m.ApplicationType))
	}
	for i, u := range m.RedirectURIs {
		if err := redirecturi.ValidateFor(u, m.ApplicationType); err != nil {
			return newError(errInvalidRedirectURI, fmt.Sprintf("redirect_uris[%d]: %v", i, err))
		}
	}
	m.RedirectURIs = dedupe(m.RedirectURIs)

	if len(m.GrantTypes) == 0 {
		m.GrantTypes = []string{grantAuthorizationCode}
	}
	for _, g := range m.GrantTypes {
		if !slices.Contains(supportedGrantTypes, g) {
			return newError(errInvalidClientMetadata, "grant_types: unsupported grant type "+printable(g)+" (supported: authorization_code, refresh_token)")
		}
	}
	m.GrantTypes = dedupe(m.GrantTypes)
	if !slices.Contains(m.GrantTypes, grantAuthorizationCode) {
		return newError(errInvalidClientMetadata, "grant_types must include authorization_code")
	}

	if len(m.ResponseTypes) == 0 {
		m.ResponseTypes = []string{responseTypeCode}
	}
	for _, t := range m.ResponseTypes {
		if t != responseTypeCode {
			return newError(errInvalidClientMetadata, "response_types: unsupported response type "+printable(t)+" (supported: code)")
		}
	}
	m.ResponseTypes = dedupe(m.ResponseTypes)

	if m.TokenEndpointAuthMethod == "" {
		m.TokenEndpointAuthMethod = defaultAuth
	}
	if !slices.Contains(supportedAuthMethods, m.TokenEndpointAuthMethod) {
		return newError(errInvalidClientMetadata, "token_endpoint_auth_method: unsupported method "+printable(m.TokenEndpointAuthMethod)+" (supported: none, client_secret_basic, client_secret_post, private_key_jwt)")
	}
	if len(m.JWKS) > 0 && string(m.JWKS) != "null" {
		return newError(errInvalidClientMetadata, "jwks (keys by value) is not supported: publish the keys at jwks_uri")
	}
	if m.TokenEndpointAuthMethod == authPrivateKeyJWT {
		if m.JWKSURI == "" {
			return newError(errInvalidClientMetadata, "jwks_uri is required with private_key_jwt")
		}
		if _, err := parseJWKSURI(m.JWKSURI); err != nil {
			return newError(errInvalidClientMetadata, "jwks_uri: "+err.Error())
		}
	} else {
		m.JWKSURI = ""
	}

	name, ok := cleanClientName(m.ClientName)
	if !ok {
		return newError(errInvalidClientMetadata, fmt.Sprintf("client_name must be at most %d characters of valid UTF-8", maxClientNameLen))
	}
	m.ClientName = name

	if len(m.Scope) > maxScopeLen {
		return newError(errInvalidClientMetadata, "scope is too long")
	}
	if _, ok := parseScope(m.Scope); !ok {
		return newError(errInvalidClientMetadata, "scope must be space-separated scope tokens (RFC 6749 §3.3)")
	}
	return nil
}

// cleanClientName trims the name and drops control and format characters
// (bidirectional overrides included) so a display name cannot disguise
// itself on the consent page.
func cleanClientName(name string) (string, bool) {
	if !utf8.ValidString(name) {
		return "", false
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	return name, utf8.RuneCountInString(name) <= maxClientNameLen
}

// parseScope splits a scope parameter into its tokens (RFC 6749 §3.3:
// scope-token = 1*( %x21 / %x23-5B / %x5D-7E )), reporting whether it is
// well formed.
func parseScope(scope string) ([]string, bool) {
	if scope == "" {
		return nil, true
	}
	toks := strings.Split(scope, " ")
	for _, t := range toks {
		if t == "" {
			return nil, false
		}
		for i := 0; i < len(t); i++ {
			c := t[i]
			if c < 0x21 || c == 0x22 || c == 0x5c || c > 0x7e {
				return nil, false
			}
		}
	}
	return dedupe(toks), true
}

// dedupe removes repeated values, keeping the first occurrence.
func dedupe(in []string) []string {
	out := make([]string, 0, len(in))
	for _, v := range in {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// printable quotes a client-supplied value for an error description,
// truncated.
func printable(v string) string {
	if len(v) > 64 {
		v = v[:64] + "…"
	}
	return fmt.Sprintf("%q", v)
}

// registrationResponse is the RFC 7591 §3.2.1 response.
type registrationResponse struct {
	ClientID                string   `json:"client_id"`
	ClientSecret            string   `json:"client_secret,omitempty"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientSecretExpiresAt   *int64   `json:"client_secret_expires_at,omitempty"`
	ClientName              string   `json:"client_name,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	Scope                   string   `json:"scope,omitempty"`
	ApplicationType         string   `json:"application_type,omitempty"`
}

// handleRegister is RFC 7591 dynamic client registration.
func (s *Server) handleRegister(w http.ResponseWriter, r *http.Request, h *hosts.Host) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		s.events.Registration(RegistrationInvalid)
		writeOAuthError(w, newError(errInvalidClientMetadata, "the request body must be application/json"))
		return
	}
	if !s.allowRegistration(w, r, h) {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRegistrationBodyBytes))
	if err != nil {
		s.events.Registration(RegistrationInvalid)
		writeOAuthError(w, newError(errInvalidClientMetadata, fmt.Sprintf("the request body is unreadable or larger than %d bytes", maxRegistrationBodyBytes)))
		return
	}
	m, oerr := parseClientMetadata(body, authSecretBasic)
	if oerr == nil && m.TokenEndpointAuthMethod == authPrivateKeyJWT {
		oerr = newError(errInvalidClientMetadata, "private_key_jwt is available to clients identified by a client ID metadata document (a URL client_id), not to registered ones")
	}
	if oerr != nil {
		s.events.Registration(RegistrationInvalid)
		writeOAuthError(w, oerr)
		return
	}
	now := s.now()
	c := store.Client{
		ID:                      secret.NewToken(),
		Kind:                    store.ClientDynamic,
		Name:                    m.ClientName,
		RedirectURIs:            m.RedirectURIs,
		GrantTypes:              m.GrantTypes,
		ResponseTypes:           m.ResponseTypes,
		TokenEndpointAuthMethod: m.TokenEndpointAuthMethod,
		Scope:                   m.Scope,
		CreatedAt:               now,
		ExpiresAt:               now.Add(clientIdleLifetime),
	}
	resp := registrationResponse{
		ClientID:                c.ID,
		ClientIDIssuedAt:        now.Unix(),
		ClientName:              c.Name,
		RedirectURIs:            c.RedirectURIs,
		GrantTypes:              c.GrantTypes,
		ResponseTypes:           c.ResponseTypes,
		TokenEndpointAuthMethod: c.TokenEndpointAuthMethod,
		Scope:                   c.Scope,
		ApplicationType:         m.ApplicationType,
	}
	if c.TokenEndpointAuthMethod != authNone {
		sec := secret.NewToken()
		c.SecretHash = secret.Hash(sec)
		resp.ClientSecret = sec
		var never int64
		resp.ClientSecretExpiresAt = &never
	}
	if err := s.store.CreateClient(r.Context(), c); err != nil {
		s.events.Registration(RegistrationError)
		s.log.ErrorContext(r.Context(), "oauth: register client", "error", err)
		writeOAuthError(w, unavailable("the registration could not be stored"))
		return
	}
	s.log.InfoContext(r.Context(), "oauth: client registered", "issuer", h.Origin, "client_id", c.ID,
		"auth_method", c.TokenEndpointAuthMethod, "grant_types", c.GrantTypes)
	s.events.Registration(RegistrationCreated)
	writeJSON(w, http.StatusCreated, resp)
}

// allowRegistration spends one unit of the caller's and the host's registration budget,
// or answers 429 with Retry-After and reports false. Registration is open to anyone and
// every registration is stored for weeks, so without a bound one client could fill the
// store; the per-caller budget keeps one caller from spending everyone's.
func (s *Server) allowRegistration(w http.ResponseWriter, r *http.Request, h *hosts.Host) bool {
	caller := callerAddress(r, s.trustedProxyHops)
	ok, wait := s.registrations.allow(h.Origin, caller, s.now())
	if !ok {
		s.log.InfoContext(r.Context(), "oauth: client registration rate limited", "issuer", h.Origin, "caller", caller, "retry_after", wait)
		s.events.Registration(RegistrationRateLimited)
		return s.refuseRegistration(w, wait)
	}
	return true
}

func (s *Server) refuseRegistration(w http.ResponseWriter, wait time.Duration) bool {
	secs := int64((wait + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
	e := newError(errTemporarilyUnavailable, "too many client registrations; try again later")
	e.status = http.StatusTooManyRequests
	writeOAuthError(w, e)
	return false
}
