// The connect flow: paths.Connect starts the upstream authorization-code flow of every
// upstream route of the host the user needs (or of the one named by route=), one after the
// other, and paths.UpstreamCallback completes each. The state is a one-time store record
// (only its hash is stored) bound to the browser session that started the flow; the callback
// checks the session before it spends the state, so a state from another session burns
// nothing.

package upstream

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// OneTimeKind is the store.OneTime kind of a connect state.
const OneTimeKind = "upstream-connect"

// stateLifetime is how long a user has to finish one upstream authorization.
const stateLifetime = 10 * time.Minute

// connectState is the payload of a connect state record.
type connectState struct {
	SessionID string   `json:"sid"`
	Host      string   `json:"host"`  // route host authority the flow runs on
	RouteID   string   `json:"route"` // the route being connected
	Pending   []string `json:"pending,omitempty"`
	// Return is where the browser goes when every flow is done: a checked redirect_url, or
	// a path on Host (the authorization request of pattern 2).
	Return string `json:"return"`
	// Extra are step-up scopes asked for on top of each route's own (BeforeCode).
	Extra []string `json:"extra,omitempty"`
	// Scope is what this route's authorization request asked for: the TI's scope when the
	// token response names none (RFC 6749 §5.1).
	Scope string `json:"scope,omitempty"`
	// Issuer and ClientID name the authorization server and client the flow started with:
	// the callback refuses to go on with others (re-discovery in between found new ones).
	Issuer   string `json:"iss,omitempty"`
	ClientID string `json:"client_id,omitempty"`
}

// Connect serves GET paths.Connect on mcp.server route hosts: ?redirect_url=…[&route=…].
func (s *Service) Connect(w http.ResponseWriter, r *http.Request) {
	h, q, ret, rts, sess, ok := s.signedInTarget(w, r, paths.Connect)
	if !ok {
		return
	}
	var err error
	var todo []*Route
	if q.Has("route") {
		if !Allowed(rts[0], sess) {
			renderFailure(w, r, http.StatusForbidden, "Not allowed", "Your access policy does not let you use "+rts[0].Name+", so it cannot be connected.", ret)
			return
		}
		todo = rts // an explicit route reconnects even when connected
	} else if todo, err = s.needed(r.Context(), sess, rts); err != nil {
		s.internalError(w, r, "read upstream tokens", err)
		return
	}
	if len(todo) == 0 {
		redirect(w, ret)
		return
	}
	s.start(w, r, sess, h, todo, ret)
}

// signedInTarget reads the target of a connect or disconnect GET (parseTarget) and the
// signed-in session; a browser without one is sent to sign in and come back to path with the
// same query. ok is false when the request has been answered.
func (s *Service) signedInTarget(w http.ResponseWriter, r *http.Request, path string) (h *hosts.Host, q url.Values, ret string, rts []*Route, sess *store.Session, ok bool) {
	h = hosts.MustFromContext(r.Context())
	q = r.URL.Query()
	if ret, rts, ok = s.parseTarget(w, r, h, q); !ok {
		return
	}
	sess, err := s.sessions.Current(r)
	if err != nil {
		s.internalError(w, r, "read session", err)
		return h, q, ret, rts, nil, false
	}
	if sess == nil {
		s.sessions.RedirectToSignIn(w, r, path+"?"+q.Encode())
		return h, q, ret, rts, nil, false
	}
	return h, q, ret, rts, sess, true
}

// parseTarget checks redirect_url and route of a connect or disconnect request, answering a
// 400 page itself when they are not acceptable. It returns the redirect target and the
// routes concerned: the one named by route, or every upstream route of h.
func (s *Service) parseTarget(w http.ResponseWriter, r *http.Request, h *hosts.Host, q url.Values) (string, []*Route, bool) {
	if len(q["redirect_url"]) != 1 {
		renderError(w, r, http.StatusBadRequest, "Invalid request", "Send exactly one redirect_url: the address of your application to return to.")
		return "", nil, false
	}
	ret, ok := CheckRedirectURL(q.Get("redirect_url"), s.clientOrigins)
	if !ok {
		renderError(w, r, http.StatusBadRequest, "Invalid redirect_url", "redirect_url must be an http or https address on the host of an MCP client route of this gateway. You are not being redirected.")
		return "", nil, false
	}
	rts := s.byHost[h.Authority]
	if q.Has("route") {
		if len(q["route"]) != 1 {
			renderError(w, r, http.StatusBadRequest, "Invalid request", "Send at most one route.")
			return "", nil, false
		}
		rt, ok := s.routes[q.Get("route")]
		if !ok || rt.Host != h.Authority {
			renderError(w, r, http.StatusBadRequest, "Invalid route", "route must be the URL of an MCP server route of this host that has an upstream OAuth provider.")
			return "", nil, false
		}
		rts = []*Route{rt}
	}
	return ret, rts, true
}

// start sends the browser to the provider of todo[0]; the rest follow from the callback.
func (s *Service) start(w http.ResponseWriter, r *http.Request, sess *store.Session, h *hosts.Host, todo []*Route, ret string) {
	s.startWith(w, r, sess, h, todo, ret, nil)
}

// startWith is start asking every route for the step-up scopes extra too.
func (s *Service) startWith(w http.ResponseWriter, r *http.Request, sess *store.Session, h *hosts.Host, todo []*Route, ret string, extra []string) {
	rt := todo[0]
	p, err := s.upstreamAS(r.Context(), rt)
	if err != nil {
		s.failDiscovery(w, r, rt, err, ret)
		return
	}
	scopes := p.scopes
	for _, sc := range extra {
		if !slices.Contains(scopes, sc) {
			scopes = append(slices.Clip(scopes), sc)
		}
	}
	st := connectState{SessionID: sess.ID, Host: h.Authority, RouteID: rt.ID, Return: ret, Extra: extra,
		Scope: strings.Join(scopes, " "), Issuer: p.issuer, ClientID: p.clientID}
	for _, p := range todo[1:] {
		st.Pending = append(st.Pending, p.ID)
	}
	payload, err := json.Marshal(st)
	if err != nil {
		s.internalError(w, r, "encode connect state", err)
		return
	}
	state := secret.NewToken()
	if err := s.store.PutOneTime(r.Context(), store.OneTime{
		Hash: secret.Hash(state), Kind: OneTimeKind, Payload: payload, ExpiresAt: s.now().Add(stateLifetime),
	}); err != nil {
		s.internalError(w, r, "store connect state", err)
		return
	}
	params := url.Values{
		"response_type":         {"code"},
		"client_id":             {p.clientID},
		"redirect_uri":          {rt.CallbackURL()},
		"state":                 {state},
		"code_challenge":        {pkceChallenge(s.pkceVerifier(state))},
		"code_challenge_method": {"S256"},
	}
	if len(scopes) > 0 {
		params.Set("scope", strings.Join(scopes, " "))
	}
	if p.resource != "" {
		params.Set("resource", p.resource)
	}
	s.log.InfoContext(r.Context(), "upstream connect started", "route_id", rt.ID, "sub", sess.Subject)
	redirect(w, withQuery(p.authURL, params))
}

// Callback serves GET paths.UpstreamCallback on mcp.server route hosts.
func (s *Service) Callback(w http.ResponseWriter, r *http.Request) {
	h := hosts.MustFromContext(r.Context())
	ctx := r.Context()
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" || len(q["state"]) != 1 {
		renderError(w, r, http.StatusBadRequest, "Invalid request", "The upstream provider sent no state. Start again from your application.")
		return
	}
	sess, err := s.sessions.Current(r)
	if err != nil {
		s.internalError(w, r, "read session", err)
		return
	}
	if sess == nil {
		renderError(w, r, http.StatusUnauthorized, "Signed out", "You are not signed in here any more. Start again from your application.")
		return
	}
	hash := secret.Hash(state)
	ot, err := s.store.GetOneTime(ctx, hash, OneTimeKind, s.now())
	if errors.Is(err, store.ErrNotFound) {
		renderError(w, r, http.StatusBadRequest, "Request expired", "This sign-in at the upstream provider has expired or was already completed. Start again from your application.")
		return
	}
	if err != nil {
		s.internalError(w, r, "read connect state", err)
		return
	}
	var st connectState
	if err := json.Unmarshal(ot.Payload, &st); err != nil {
		s.internalError(w, r, "decode connect state", err)
		return
	}
	rt, ok := s.routes[st.RouteID]
	// Check, then spend: a state started by another session (or on another host) is refused
	// and left to its owner.
	if st.SessionID != sess.ID || st.Host != h.Authority || !ok {
		s.log.WarnContext(ctx, "upstream callback with another session's state", "sub", sess.Subject)
		renderError(w, r, http.StatusForbidden, "Wrong session", "This sign-in at the upstream provider was started by another session. Start again from your application.")
		return
	}
	if _, err := s.store.TakeOneTime(ctx, hash, OneTimeKind, s.now()); errors.Is(err, store.ErrNotFound) {
		renderError(w, r, http.StatusBadRequest, "Request expired", "This sign-in at the upstream provider has expired or was already completed. Start again from your application.")
		return
	} else if err != nil {
		s.internalError(w, r, "spend connect state", err)
		return
	}
	p, err := s.upstreamAS(ctx, rt)
	if err != nil {
		s.failDiscovery(w, r, rt, err, st.Return)
		return
	}
	if p.issuer != st.Issuer || p.clientID != st.ClientID {
		s.events.Connect(ConnectRefused)
		s.log.WarnContext(ctx, "upstream callback: the route's authorization server or client changed during the flow", "route_id", rt.ID)
		renderFailure(w, r, http.StatusBadGateway, "Provider changed", rt.Name+"'s authorization server changed while you were signing in. Start again from your application.", st.Return)
		return
	}
	if !checkIssuer(q, p) {
		s.events.Connect(ConnectRefused)
		s.log.WarnContext(ctx, "upstream callback: iss does not name the route's provider", "route_id", rt.ID)
		renderFailure(w, r, http.StatusBadRequest, "Wrong provider", "The answer did not come from "+rt.Name+"'s provider. Start again from your application.", st.Return)
		return
	}
	if e := q.Get("error"); e != "" {
		s.events.Connect(ConnectRefused)
		code := RegisteredError(e)
		s.log.InfoContext(ctx, "upstream authorization refused", "route_id", rt.ID, "error", code)
		status := http.StatusBadGateway
		if code == "access_denied" {
			status = http.StatusForbidden
		}
		renderFailure(w, r, status, "Not connected", rt.Name+"'s provider did not authorize the connection ("+code+").", st.Return)
		return
	}
	code := q.Get("code")
	if code == "" || len(q["code"]) != 1 {
		renderFailure(w, r, http.StatusBadRequest, "Invalid request", "The upstream provider sent no authorization code. Start again from your application.", st.Return)
		return
	}
	tok, err := s.exchange(ctx, rt, p, url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {rt.CallbackURL()},
		"code_verifier": {s.pkceVerifier(state)},
	})
	if err != nil {
		s.afterTokenError(ctx, rt, p, err)
		s.events.Connect(ConnectFailed)
		s.log.WarnContext(ctx, "upstream code exchange failed", "route_id", rt.ID, "error", err.Error())
		renderFailure(w, r, http.StatusBadGateway, "Not connected", "The gateway could not obtain a token from "+rt.Name+"'s provider: "+publicReason(err)+". Try again later.", st.Return)
		return
	}
	if tok.Scope == "" {
		tok.Scope = st.Scope // RFC 6749 §5.1: no scope in the answer means the one asked for
	}
	if p.disc != nil {
		tok.Issuer = p.issuer
	}
	if err := s.save(ctx, sess.Subject, rt.ID, tok); err != nil {
		s.internalError(w, r, "store upstream token", err)
		return
	}
	s.events.Connect(ConnectConnected)
	s.log.InfoContext(ctx, "upstream connected", "route_id", rt.ID, "sub", sess.Subject)
	if missing := ungranted(tok.Scope, st.Extra); len(missing) > 0 {
		// A step-up the provider did not grant: going back to the authorization request would
		// send the browser here again, for ever.
		s.log.InfoContext(ctx, "upstream step-up scopes not granted", "route_id", rt.ID, "scopes", strings.Join(missing, " "))
		renderError(w, r, http.StatusForbidden, "Not granted", rt.Name+"'s provider did not grant what the service asked for ("+
			strings.Join(missing, " ")+"). Ask your administrator.")
		return
	}
	s.next(w, r, sess, h, st)
}

// next continues a chain after one route connected: the next pending route the user still
// needs, or the return target.
func (s *Service) next(w http.ResponseWriter, r *http.Request, sess *store.Session, h *hosts.Host, st connectState) {
	var pending []*Route
	for _, id := range st.Pending {
		if rt, ok := s.routes[id]; ok && rt.Host == h.Authority {
			pending = append(pending, rt)
		}
	}
	todo, err := s.neededWith(r.Context(), sess, pending, st.Extra)
	if err != nil {
		s.internalError(w, r, "read upstream tokens", err)
		return
	}
	if len(todo) > 0 {
		s.startWith(w, r, sess, h, todo, st.Return, st.Extra)
		return
	}
	redirect(w, st.Return)
}

// CheckIssuer is checkIssuer of an upstream_oauth2 route on its parts (fuzzed).
func CheckIssuer(iss string, has bool, issuer, authURL string) bool {
	if issuer != "" {
		return has && iss == issuer
	}
	if !has {
		return true
	}
	a, err := url.Parse(authURL)
	if err != nil {
		return false
	}
	u, err := url.Parse(iss)
	if err != nil || u.User != nil || u.Scheme != a.Scheme {
		return false
	}
	return hosts.Normalize(u.Host, u.Scheme) == hosts.Normalize(a.Host, a.Scheme)
}

// publicReason is the part of a token endpoint error a user may see.
func publicReason(err error) string {
	var te *TokenError
	if errors.As(err, &te) {
		switch {
		case te.Code != "":
			return "it answered " + te.Code
		case te.Status != 0 && te.Reason == "":
			return "it answered with status " + http.StatusText(te.Status)
		case te.Reason != "":
			return te.Reason
		}
	}
	return "no usable answer"
}

// withQuery appends params to raw's query.
func withQuery(raw string, params url.Values) string {
	sep := "?"
	if strings.Contains(raw, "?") {
		sep = "&"
	}
	return raw + sep + params.Encode()
}

func (s *Service) internalError(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.log.ErrorContext(r.Context(), "upstream: "+what, "error", err.Error())
	renderError(w, r, http.StatusInternalServerError, "Something went wrong", "The request could not be completed. Try again later.")
}
