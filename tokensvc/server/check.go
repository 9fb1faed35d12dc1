package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/oauth"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// statusBadRequest is the Status of a check request the service cannot answer (the filter
// fails closed on it).
const statusBadRequest = "invalid_request"

// requireFilterKey answers 401 with nothing else unless the request carries the filter key:
// on the check API nothing happens before the key is verified.
func (s *Server) requireFilterKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !secret.Equal(r.Header.Get(checkapi.KeyHeader), s.filterKey) {
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// handleCheck serves the check API (POST paths.Check, behind requireFilterKey). No call
// leaves the service on this path: no identity provider, no upstream.
func (s *Server) handleCheck(w http.ResponseWriter, r *http.Request) {
	var req checkapi.Request
	if status, msg := decodeCheck(r.Body, &req); status != 0 {
		s.checkReply(w, status, &checkapi.Response{Status: statusBadRequest, Error: "invalid_request", ErrorDescription: msg})
		return
	}
	status, resp := s.check(r, &req)
	if status >= 500 {
		s.log.ErrorContext(r.Context(), "check failed", "route_id", req.RouteID, "error", resp.ErrorDescription)
		resp = &checkapi.Response{Status: "error", Error: "server_error", ErrorDescription: "the token service could not answer"}
	}
	s.checkReply(w, status, resp)
}

// decodeCheck reads one JSON request from body (bounded by the middleware).
func decodeCheck(body io.Reader, req *checkapi.Request) (int, string) {
	dec := json.NewDecoder(body)
	if err := dec.Decode(req); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return http.StatusRequestEntityTooLarge, "request body too large"
		}
		return http.StatusBadRequest, "request body is not a JSON check request"
	}
	if _, err := dec.Token(); err != io.EOF {
		return http.StatusBadRequest, "request body has data after the JSON object"
	}
	return 0, ""
}

// check answers req. Errors that are the service's own come back with status 500 and the
// cause in ErrorDescription (logged, then replaced before answering).
func (s *Server) check(r *http.Request, req *checkapi.Request) (int, *checkapi.Response) {
	ctx := r.Context()
	ri, ok := s.routes[req.RouteID]
	if !ok {
		return http.StatusBadRequest, &checkapi.Response{Status: statusBadRequest, Error: "invalid_request", ErrorDescription: "unknown route_id"}
	}
	if req.Host == "" || hosts.Normalize(req.Host, ri.scheme) != ri.host {
		return http.StatusBadRequest, &checkapi.Response{Status: statusBadRequest, Error: "invalid_request", ErrorDescription: "host is not the route's host"}
	}
	if (req.Token == "") == (req.Cookie == "") {
		return http.StatusBadRequest, &checkapi.Response{Status: statusBadRequest, Error: "invalid_request", ErrorDescription: "send exactly one of token and cookie"}
	}
	now := s.now()
	resp := &checkapi.Response{Status: checkapi.StatusOK}
	var sess store.Session
	var expires time.Time
	if req.Token != "" {
		// Only MCP server routes take a bearer token (the filter sends the browser session on
		// mcp.client and plain routes): an External Token, whoever holds it, must never buy an
		// identity and an assertion for a browser application.
		if ri.kind != pluginconf.KindServer {
			return invalidToken("only MCP server routes take a bearer token; this route takes a browser session")
		}
		at, ts, err := s.tokenSession(ctx, req.Token, ri.id)
		if errors.Is(err, oauth.ErrInvalidToken) {
			return invalidToken("the access token is not valid for this route")
		}
		if err != nil {
			return serverError(err)
		}
		sess = ts
		expires = earliest(at.ExpiresAt, sess.ExpiresAt)
	} else {
		if ri.kind == pluginconf.KindServer {
			return noSession("MCP server routes take a bearer token, not a browser session")
		}
		c, cs, err := s.store.GetBrowserCookie(ctx, secret.Hash(req.Cookie), ri.host, now)
		if errors.Is(err, store.ErrNotFound) {
			return noSession("no browser session on this host")
		}
		if err != nil {
			return serverError(err)
		}
		if !cs.RevokedAt.IsZero() || !now.Before(cs.ExpiresAt) {
			return noSession("the session has ended")
		}
		sess = cs
		expires = earliest(c.ExpiresAt, sess.ExpiresAt)
		if ri.kind == pluginconf.KindClient {
			tok, exp, err := s.oauth.IssueClientToken(ctx, sess)
			if err != nil {
				return serverError(err)
			}
			resp.ClientToken = tok
			expires = earliest(expires, exp)
		}
	}
	resp.Identity = identityOf(&sess)
	if ri.kind == pluginconf.KindServer {
		resp.SessionKey = s.sessionKey(ri.id, sess.Subject)
	}
	if ri.upstream {
		ti, exp, err := s.upstream.Token(ctx, sess.Subject, ri.id)
		if errors.Is(err, ErrUpstreamRequired) {
			return checkapi.HTTPStatus(checkapi.StatusUpstreamRequired), &checkapi.Response{
				Status: checkapi.StatusUpstreamRequired, Identity: resp.Identity,
				ConnectURL: ri.origin + paths.Connect + "?redirect_url=",
				Error:      "upstream_required", ErrorDescription: "connect the upstream service first",
			}
		}
		if err != nil {
			return serverError(err)
		}
		resp.UpstreamToken = ti
		expires = earliest(expires, exp)
	}
	if !now.Before(expires) {
		return invalidToken("the credential has expired")
	}
	jwt, aexp, err := s.signer.Sign(ri.host, assertionIdentity(resp.Identity), expires)
	if err != nil {
		if req.Token != "" {
			return invalidToken("the credential expires now")
		}
		return noSession("the session expires now")
	}
	resp.Assertion = jwt
	resp.ExpiresAt = earliest(expires, aexp).Unix()
	return checkapi.HTTPStatus(checkapi.StatusOK), resp
}

// tokenSession validates an External Token at routeID and returns it with its session,
// which must exist, be live and belong to the token's subject: a token never outlives its
// session. Refusals are oauth.ErrInvalidToken.
func (s *Server) tokenSession(ctx context.Context, token, routeID string) (store.AccessToken, store.Session, error) {
	at, err := s.oauth.ValidateAccessToken(ctx, token, routeID)
	if err != nil {
		return at, store.Session{}, err
	}
	if at.SessionID == "" {
		return at, store.Session{}, fmt.Errorf("token has no session: %w", oauth.ErrInvalidToken)
	}
	sess, err := s.store.GetSession(ctx, at.SessionID)
	if errors.Is(err, store.ErrNotFound) {
		return at, store.Session{}, fmt.Errorf("session ended: %w", oauth.ErrInvalidToken)
	}
	if err != nil {
		return at, store.Session{}, fmt.Errorf("read session: %w", err)
	}
	if !sess.RevokedAt.IsZero() || !s.now().Before(sess.ExpiresAt) || sess.Subject != at.Subject {
		return at, store.Session{}, fmt.Errorf("session ended: %w", oauth.ErrInvalidToken)
	}
	return at, sess, nil
}

// sessionKey is the key with which the filter binds the MCP session IDs of subject on the
// route routeID (checkapi.Response.SessionKey): HMAC-SHA256 under a key derived from
// shared_secret, so that every replica gives the same key and none is stored.
func (s *Server) sessionKey(routeID, subject string) string {
	m := hmac.New(sha256.New, s.sessionSecret)
	m.Write([]byte(routeID))
	m.Write([]byte{0})
	m.Write([]byte(subject))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *Server) checkReply(w http.ResponseWriter, status int, resp *checkapi.Response) {
	b, err := json.Marshal(resp)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"status":"error","error":"server_error"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func invalidToken(desc string) (int, *checkapi.Response) {
	return checkapi.HTTPStatus(checkapi.StatusInvalidToken), &checkapi.Response{Status: checkapi.StatusInvalidToken, Error: "invalid_token", ErrorDescription: desc}
}

func noSession(desc string) (int, *checkapi.Response) {
	return checkapi.HTTPStatus(checkapi.StatusNoSession), &checkapi.Response{Status: checkapi.StatusNoSession, Error: "no_session", ErrorDescription: desc}
}

func serverError(err error) (int, *checkapi.Response) {
	return http.StatusInternalServerError, &checkapi.Response{Status: "error", Error: "server_error", ErrorDescription: err.Error()}
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
