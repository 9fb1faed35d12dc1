package check

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/shared/policy"
	"github.com/mcpmesh/gateway/tokensvc/assertion"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/oauth"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// ErrUpstreamRequired means the user has no usable Internal Token for the route: they must
// (re)connect (paths.Connect, or the authorization flow of an MCP client). The check answers
// invalid_token.
var ErrUpstreamRequired = errors.New("check: upstream connection required")

// Store is what Checker reads: sessions and browser cookies.
type Store interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	GetBrowserCookie(ctx context.Context, hash []byte, host string, now time.Time) (store.BrowserCookie, store.Session, error)
}

// AccessTokens validates External Tokens (oauth.Server).
type AccessTokens interface {
	// ValidateAccessToken returns the token if it is valid at routeID; refusals wrap
	// oauth.ErrInvalidToken.
	ValidateAccessToken(ctx context.Context, token, routeID string) (store.AccessToken, error)
	// IssueClientToken mints the client token of an mcp.client route for sess.
	IssueClientToken(ctx context.Context, sess store.Session) (string, time.Time, error)
}

// Signer signs assertions (assertion.Signer).
type Signer interface {
	Sign(audience string, id assertion.Identity, expires time.Time) (string, time.Time, error)
}

// UpstreamTokens supplies Internal Tokens (TIs).
type UpstreamTokens interface {
	// Token returns the current TI of subject for routeID and until when it may be used
	// (zero: unknown).
	// It returns an error wrapping ErrUpstreamRequired when there is none or it can no
	// longer be used. It must be fast: the check API calls it on every cache miss.
	Token(ctx context.Context, subject, routeID string) (string, time.Time, error)
}

// Route is what the check API needs to know about a route, computed once.
type Route struct {
	Config   *config.Route
	ID       string
	Scheme   string
	Host     string // normalised authority: the assertion audience
	Origin   string
	Kind     string // pluginconf.KindServer, KindClient or plain
	Upstream bool   // the route has upstream OAuth
	// Policy is the route's parsed policy; nil (allows nothing) if it does not parse, which
	// a validated configuration rules out.
	Policy *policy.Policy
}

// Checker answers check requests. Create it with New; it is safe for concurrent use.
type Checker struct {
	routes        map[string]*Route
	store         Store
	tokens        AccessTokens
	upstream      UpstreamTokens
	signer        Signer
	sessionSecret []byte
	now           func() time.Time
}

// New returns a Checker for the routes of a validated cfg.
func New(cfg *config.Config, st Store, tokens AccessTokens, upstream UpstreamTokens, signer Signer, now func() time.Time) *Checker {
	c := &Checker{
		routes: map[string]*Route{}, store: st, tokens: tokens, upstream: upstream, signer: signer,
		sessionSecret: cfg.DeriveKey("mcp-session-binding"), now: now,
	}
	for i := range cfg.Routes {
		r := &cfg.Routes[i]
		n := r.Normalized()
		pol, _ := policy.Parse(r.Policy)
		c.routes[n.ID] = &Route{
			Config: r, ID: n.ID, Scheme: n.Scheme, Host: n.Host, Origin: n.Scheme + "://" + n.Host, Kind: r.RouteKind(),
			Upstream: r.MCP != nil && r.MCP.Server.HasUpstream(),
			Policy:   pol,
		}
	}
	return c
}

// Route returns the route whose ID is id.
func (c *Checker) Route(id string) (*Route, bool) {
	r, ok := c.routes[id]
	return r, ok
}

// Check answers req: the filter's answer when the request may proceed, a Refusal otherwise.
func (c *Checker) Check(ctx context.Context, req *checkapi.Request) (*checkapi.Response, *Refusal) {
	ri, ok := c.routes[req.RouteID]
	if !ok {
		return nil, invalidRequest("unknown route_id")
	}
	if req.Host == "" || hosts.Normalize(req.Host, ri.Scheme) != ri.Host {
		return nil, invalidRequest("host is not the route's host")
	}
	if (req.Token == "") == (req.Cookie == "") {
		return nil, invalidRequest("send exactly one of token and cookie")
	}
	now := c.now()
	resp := &checkapi.Response{Status: checkapi.StatusOK}
	var sess store.Session
	var expires time.Time
	var clientID string // the OAuth client of a token
	if req.Token != "" {
		// Only MCP server routes take a bearer token (the filter sends the browser session on
		// mcp.client and plain routes): an External Token, whoever holds it, must never buy an
		// identity and an assertion for a browser application.
		if ri.Kind != pluginconf.KindServer {
			return nil, invalidToken("only MCP server routes take a bearer token; this route takes a browser session")
		}
		at, ts, err := c.TokenSession(ctx, req.Token, ri.ID)
		if errors.Is(err, oauth.ErrInvalidToken) {
			return nil, invalidToken("the access token is not valid for this route")
		}
		if err != nil {
			return nil, serverError(err)
		}
		sess = ts
		expires = earliest(at.ExpiresAt, sess.ExpiresAt)
		clientID = at.ClientID
	} else {
		if ri.Kind == pluginconf.KindServer {
			return nil, noSession("MCP server routes take a bearer token, not a browser session")
		}
		ck, cs, err := c.store.GetBrowserCookie(ctx, secret.Hash(req.Cookie), ri.Host, now)
		if errors.Is(err, store.ErrNotFound) {
			return nil, noSession("no browser session on this host")
		}
		if err != nil {
			return nil, serverError(err)
		}
		if !cs.RevokedAt.IsZero() || !now.Before(cs.ExpiresAt) {
			return nil, noSession("the session has ended")
		}
		sess = cs
		expires = earliest(ck.ExpiresAt, sess.ExpiresAt)
		if ri.Kind == pluginconf.KindClient {
			tok, exp, err := c.tokens.IssueClientToken(ctx, sess)
			if err != nil {
				return nil, serverError(err)
			}
			resp.ClientToken = tok
			expires = earliest(expires, exp)
		}
	}
	resp.Identity = Identity(&sess)
	resp.Identity.ClientID = clientID
	if ri.Kind == pluginconf.KindServer {
		resp.SessionKey = c.sessionKey(ri.ID, sess.Subject)
	}
	if ri.Upstream {
		ti, exp, err := c.upstream.Token(ctx, sess.Subject, ri.ID)
		if errors.Is(err, ErrUpstreamRequired) {
			// No usable Internal Token (never connected, disconnected, or refused by the
			// provider): the client signs in again, and the authorization flow runs the
			// upstream connect (docs/pattern-2-upstream-oauth.md).
			return nil, &Refusal{Response: &checkapi.Response{
				Status: checkapi.StatusUpstreamRequired, Identity: resp.Identity,
				Error: "invalid_token", ErrorDescription: "the upstream service must be connected again: sign in again",
			}}
		}
		if err != nil {
			return nil, serverError(err)
		}
		resp.UpstreamToken = ti
		expires = earliest(expires, exp) // the bundle never outlives the TI it carries
	}
	if !now.Before(expires) {
		return nil, invalidToken("the credential has expired")
	}
	jwt, aexp, err := c.signer.Sign(ri.Host, assertionIdentity(resp.Identity), expires)
	if err != nil {
		if req.Token != "" {
			return nil, invalidToken("the credential expires now")
		}
		return nil, noSession("the session expires now")
	}
	resp.Assertion = jwt
	resp.ExpiresAt = earliest(expires, aexp).Unix()
	return resp, nil
}

// TokenSession validates an External Token at routeID and returns it with its session,
// which must exist, be live and belong to the token's subject: a token never outlives its
// session. A service token (oauth.IsServiceToken) has none: its session is a stand-in with
// the service subject, expiring with the token. Refusals wrap oauth.ErrInvalidToken.
func (c *Checker) TokenSession(ctx context.Context, token, routeID string) (store.AccessToken, store.Session, error) {
	at, err := c.tokens.ValidateAccessToken(ctx, token, routeID)
	if err != nil {
		return at, store.Session{}, err
	}
	if oauth.IsServiceToken(at) {
		// A service identity (client credentials): no user and no session; the identity is the
		// client's, and it lives as long as the token.
		return at, store.Session{Subject: at.Subject, ExpiresAt: at.ExpiresAt}, nil
	}
	if at.SessionID == "" {
		return at, store.Session{}, fmt.Errorf("token has no session: %w", oauth.ErrInvalidToken)
	}
	sess, err := c.store.GetSession(ctx, at.SessionID)
	if errors.Is(err, store.ErrNotFound) {
		return at, store.Session{}, fmt.Errorf("session ended: %w", oauth.ErrInvalidToken)
	}
	if err != nil {
		return at, store.Session{}, fmt.Errorf("read session: %w", err)
	}
	if !sess.RevokedAt.IsZero() || !c.now().Before(sess.ExpiresAt) || sess.Subject != at.Subject {
		return at, store.Session{}, fmt.Errorf("session ended: %w", oauth.ErrInvalidToken)
	}
	return at, sess, nil
}

// sessionKey is the key with which the filter binds the MCP session IDs of subject on the
// route routeID (checkapi.Response.SessionKey): HMAC-SHA256 under a key derived from
// shared_secret, so that every replica gives the same key and none is stored.
func (c *Checker) sessionKey(routeID, subject string) string {
	m := hmac.New(sha256.New, c.sessionSecret)
	m.Write([]byte(routeID))
	m.Write([]byte{0})
	m.Write([]byte(subject))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Refusal is a check that does not let the request proceed. Response is the answer to send;
// Err, when set, is the service's own failure, such as its store being unreachable (HTTP 503,
// which the filter turns into 503 for the client, never a 401 that would make a client throw
// its token away): it is logged, and the answer sent is a generic server_error, never Err's
// text.
type Refusal struct {
	Response *checkapi.Response
	Err      error
}

// HTTPStatus is the status of the refusal's answer: checkapi.HTTPStatus of its Status, 400
// for invalid_request, 503 for the service's own failures.
func (r *Refusal) HTTPStatus() int {
	if r.Err != nil {
		return http.StatusServiceUnavailable
	}
	if s := checkapi.HTTPStatus(r.Response.Status); s != 0 {
		return s
	}
	return http.StatusBadRequest
}

func (r *Refusal) Error() string {
	if r.Err != nil {
		return "check: " + r.Err.Error()
	}
	return "check: " + r.Response.Status + ": " + r.Response.ErrorDescription
}

// StatusInvalidRequest is the Status of a request the service cannot answer (the filter
// fails closed on it).
const StatusInvalidRequest = "invalid_request"

func invalidRequest(desc string) *Refusal {
	return &Refusal{Response: &checkapi.Response{Status: StatusInvalidRequest, Error: "invalid_request", ErrorDescription: desc}}
}

func invalidToken(desc string) *Refusal {
	return &Refusal{Response: &checkapi.Response{Status: checkapi.StatusInvalidToken, Error: "invalid_token", ErrorDescription: desc}}
}

func noSession(desc string) *Refusal {
	return &Refusal{Response: &checkapi.Response{Status: checkapi.StatusNoSession, Error: "no_session", ErrorDescription: desc}}
}

func serverError(err error) *Refusal {
	return &Refusal{Err: err, Response: &checkapi.Response{Status: "error", Error: "server_error", ErrorDescription: "the token service could not answer"}}
}

// earliest returns the earlier of a and b, ignoring zero times.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
