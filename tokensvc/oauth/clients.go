package oauth

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpmesh/gateway/shared/domains"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// errUnknownClient means no registered client has the ID.
var errUnknownClient = errors.New("unknown client")

// lookupClient returns the client of id: a registered client, or for a URL
// client ID the client described by its metadata document (domain checked
// against mcp_allowed_client_id_domains before anything is fetched).
// Errors wrap errUnknownClient, errClientIDDomain or errClientDocument, or
// are storage failures.
func (s *Server) lookupClient(ctx context.Context, id string) (store.Client, error) {
	if c, ok := s.configuredClient(id); ok {
		return c.client, nil
	}
	if isURLClientID(id) {
		// The allowlist is checked first, so that any URL outside it gets
		// the administrator's message, then the URL's shape.
		if u, err := url.Parse(id); err != nil || !domains.DomainAllowed(s.cfg.MCPAllowedClientIDDomains, u.Hostname()) {
			return store.Client{}, errClientIDDomain
		}
		if _, err := parseClientIDURL(id); err != nil {
			return store.Client{}, fmt.Errorf("%w: %w", errClientDocument, err)
		}
		return s.docs.resolve(ctx, id)
	}
	if id == "" || len(id) > 256 {
		return store.Client{}, errUnknownClient
	}
	c, err := s.store.GetClient(ctx, id, s.now())
	if errors.Is(err, store.ErrNotFound) {
		return store.Client{}, errUnknownClient
	}
	if err != nil {
		return store.Client{}, fmt.Errorf("look up client: %w", err)
	}
	return c, nil
}

// authenticateClient authenticates the client of a token or revocation
// request with the method it registered (RFC 6749 §2.3, RFC 7591 §2):
// none (client_id in the body, no secret), client_secret_basic or
// client_secret_post. Any mismatch is invalid_client.
// clientPost reads the form of a POST to the token or revocation endpoint and authenticates
// its client. When it returns false it has answered the request with the OAuth error.
func (s *Server) clientPost(w http.ResponseWriter, r *http.Request) (url.Values, store.Client, bool) {
	form, oerr := readForm(w, r)
	if oerr == nil {
		var client store.Client
		if client, oerr = s.authenticateClient(r.Context(), r, form); oerr == nil {
			return form, client, true
		}
	}
	writeOAuthError(w, oerr)
	return nil, store.Client{}, false
}

func (s *Server) authenticateClient(ctx context.Context, r *http.Request, form url.Values) (store.Client, *oauthError) {
	if form.Has("client_assertion") || form.Has("client_assertion_type") {
		if r.Header.Get("Authorization") != "" || form.Has("client_secret") {
			return store.Client{}, newError(errInvalidRequest, "use only one client authentication method")
		}
		return s.authenticateAssertion(ctx, r, form)
	}
	var (
		id, presented  string
		used           = authNone
		attemptedBasic bool
	)
	if authz := r.Header.Get("Authorization"); authz != "" {
		scheme, cred, _ := strings.Cut(authz, " ")
		if !strings.EqualFold(scheme, "Basic") {
			return store.Client{}, invalidClient("use HTTP Basic or form parameters for client authentication", false)
		}
		attemptedBasic = true
		bid, bsecret, ok := decodeBasic(cred)
		if !ok {
			return store.Client{}, invalidClient("malformed HTTP Basic credentials", true)
		}
		if _, inBody := form["client_secret"]; inBody {
			return store.Client{}, newError(errInvalidRequest, "use only one client authentication method")
		}
		if bodyID := form.Get("client_id"); bodyID != "" && bodyID != bid {
			return store.Client{}, newError(errInvalidRequest, "client_id in the body differs from the authenticated client")
		}
		id, presented, used = bid, bsecret, authSecretBasic
	} else {
		id = form.Get("client_id")
		if sec, ok := form["client_secret"]; ok {
			presented, used = sec[0], authSecretPost
		}
	}
	if id == "" {
		return store.Client{}, invalidClient("client authentication is required", false)
	}
	c, err := s.lookupClient(ctx, id)
	if err != nil {
		if errors.Is(err, errUnknownClient) || errors.Is(err, errClientIDDomain) || errors.Is(err, errClientDocument) {
			return store.Client{}, invalidClient("unknown client", attemptedBasic)
		}
		s.log.ErrorContext(ctx, "oauth: client lookup", "error", err)
		return store.Client{}, unavailable("client lookup failed")
	}
	if used != c.TokenEndpointAuthMethod {
		return store.Client{}, invalidClient("the client must authenticate with "+c.TokenEndpointAuthMethod, attemptedBasic || c.TokenEndpointAuthMethod == authSecretBasic)
	}
	if used != authNone {
		// Hashes have a fixed length, so the comparison time reveals nothing.
		if len(c.SecretHash) == 0 || subtle.ConstantTimeCompare(secret.Hash(presented), c.SecretHash) != 1 {
			return store.Client{}, invalidClient("client authentication failed", attemptedBasic)
		}
	}
	s.touchClient(ctx, c)
	return c, nil
}

// authenticateAssertion authenticates a client by private_key_jwt (assertion.go): a client
// identified by a client ID metadata document that names private_key_jwt and a jwks_uri in
// mcp_allowed_client_id_domains.
func (s *Server) authenticateAssertion(ctx context.Context, r *http.Request, form url.Values) (store.Client, *oauthError) {
	if form.Get("client_assertion_type") != clientAssertionTypeJWT {
		return store.Client{}, invalidClient("client_assertion_type must be "+clientAssertionTypeJWT, false)
	}
	pa, err := parseClientAssertion(form.Get("client_assertion"))
	if err != nil {
		return store.Client{}, invalidClient(err.Error(), false)
	}
	if id := form.Get("client_id"); id != "" && id != pa.clientID {
		return store.Client{}, invalidClient("client_id differs from the client assertion's sub", false)
	}
	if !isURLClientID(pa.clientID) {
		return store.Client{}, invalidClient("private_key_jwt is for clients identified by a client ID metadata document", false)
	}
	c, err := s.lookupClient(ctx, pa.clientID)
	if err != nil {
		if errors.Is(err, errUnknownClient) || errors.Is(err, errClientIDDomain) || errors.Is(err, errClientDocument) {
			return store.Client{}, invalidClient("unknown client", false)
		}
		s.log.ErrorContext(ctx, "oauth: client lookup", "error", err)
		return store.Client{}, unavailable("client lookup failed")
	}
	if c.TokenEndpointAuthMethod != authPrivateKeyJWT {
		return store.Client{}, invalidClient("the client must authenticate with "+c.TokenEndpointAuthMethod, false)
	}
	doc, err := s.docs.resolveDocument(ctx, pa.clientID)
	if err != nil {
		return store.Client{}, invalidClient("unknown client", false)
	}
	if u, err := parseJWKSURI(doc.jwksURI); err != nil || !domains.DomainAllowed(s.cfg.MCPAllowedClientIDDomains, u.Hostname()) {
		return store.Client{}, invalidClient("the client's jwks_uri is not in a domain of mcp_allowed_client_id_domains", false)
	}
	if err := s.verifyClientAssertion(ctx, hosts.MustFromContext(ctx), pa, c.ID, doc.jwksURI); err != nil {
		if errors.Is(err, errAssertion) {
			s.log.InfoContext(ctx, "oauth: client assertion refused", "client_id", c.ID, "reason", err.Error())
			return store.Client{}, invalidClient(err.Error(), false)
		}
		s.log.ErrorContext(ctx, "oauth: verify client assertion", "client_id", c.ID, "error", err)
		return store.Client{}, unavailable("the client assertion could not be checked")
	}
	return c, nil
}

func invalidClient(desc string, basic bool) *oauthError {
	e := newError(errInvalidClient, desc)
	e.basicChallenge = basic
	return e
}

// decodeBasic decodes HTTP Basic credentials whose parts are
// form-urlencoded (RFC 6749 §2.3.1).
func decodeBasic(cred string) (id, sec string, ok bool) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return "", "", false
	}
	rid, rsec, found := strings.Cut(string(raw), ":")
	if !found {
		return "", "", false
	}
	if id, err = url.QueryUnescape(rid); err != nil {
		return "", "", false
	}
	if sec, err = url.QueryUnescape(rsec); err != nil {
		return "", "", false
	}
	return id, sec, id != ""
}
