package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// maxStateLen bounds the state parameter echoed back to the client.
const maxStateLen = 2048

// authRequest is a validated authorization request. It is the payload of a
// pending consent (store.OneTime of kind "consent").
type authRequest struct {
	SessionID     string `json:"sid"`
	Issuer        string `json:"iss"`
	ClientID      string `json:"client_id"`
	RedirectURI   string `json:"redirect_uri"`
	State         string `json:"state,omitempty"`
	CodeChallenge string `json:"code_challenge"`
	Scope         string `json:"scope,omitempty"`
	Resource      string `json:"resource,omitempty"`
}

// handleAuthorize is the authorization endpoint (RFC 6749 §4.1.1 with PKCE,
// RFC 8707, RFC 9207). client_id and redirect_uri are verified first; until
// both are, errors are shown as a page and never redirected.
func (s *Server) handleAuthorize(w http.ResponseWriter, r *http.Request, h *hosts.Host) {
	params := r.URL.Query()
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		if err := r.ParseForm(); err != nil {
			renderError(w, r, http.StatusBadRequest, "Invalid request", "The authorization request could not be read.", "")
			return
		}
		params = r.Form
	}
	ctx := r.Context()

	clientID := params.Get("client_id")
	if clientID == "" || len(params["client_id"]) > 1 {
		renderError(w, r, http.StatusBadRequest, "Invalid request", "The application sent no client_id, or more than one.", "")
		return
	}
	client, err := s.lookupClient(ctx, clientID)
	switch {
	case errors.Is(err, errClientIDDomain):
		s.log.InfoContext(ctx, "oauth: client ID document domain not allowed", "client_id", clientID)
		renderDomainNotAllowed(w, r, clientID)
		return
	case errors.Is(err, errClientDocument):
		renderError(w, r, http.StatusBadRequest, "Client not usable", "The application's client ID metadata document could not be used: "+strings.TrimPrefix(err.Error(), errClientDocument.Error()+": ")+".", clientID)
		return
	case errors.Is(err, errUnknownClient):
		renderError(w, r, http.StatusBadRequest, "Unknown application", "This application is not registered here, or its registration expired. Restart the sign-in from the application.", clientID)
		return
	case err != nil:
		s.log.ErrorContext(ctx, "oauth: client lookup", "error", err)
		renderUnavailable(w, r, "The application could not be looked up. Try again in a moment.", clientID)
		return
	}
	redirectURI := params.Get("redirect_uri")
	if redirectURI == "" || len(params["redirect_uri"]) > 1 || !matchRedirectURI(client.RedirectURIs, redirectURI) {
		renderError(w, r, http.StatusBadRequest, "Invalid redirect URI", "The redirect_uri is missing or is not registered for this application, so you are not being sent back to it.", clientID)
		return
	}

	// The redirect URI is registered. Errors go back to it only for clients the
	// operator configured; anyone can register a client or publish a metadata
	// document, so for those the user sees the error page instead, until the
	// consent page has shown where the browser is being sent (RFC 9700
	// §4.11.2).
	state := ""
	if len(params["state"]) == 1 {
		state = params.Get("state")
	}
	redirectErrors := redirectsErrorsBeforeConsent(client)
	fail := func(code, desc string) {
		if redirectErrors {
			s.redirectResult(w, r, redirectURI, h.Origin, state, url.Values{"error": {code}, "error_description": {desc}})
			return
		}
		s.renderAuthorizeError(w, r, client, code, desc)
	}
	req, code, desc := s.validateAuthParams(params, client, h)
	if code != "" {
		fail(code, desc)
		return
	}
	req.ClientID, req.RedirectURI, req.State, req.Issuer = client.ID, redirectURI, state, h.Origin
	promptNone := slices.Contains(strings.Fields(params.Get("prompt")), "none")

	sess, err := s.sessions.Current(r)
	if err != nil {
		s.log.ErrorContext(ctx, "oauth: read browser session", "error", err)
		renderUnavailable(w, r, "Your session could not be read. Try again in a moment.", clientID)
		return
	}
	if sess == nil || (!sess.ExpiresAt.IsZero() && !s.now().Before(sess.ExpiresAt)) {
		if promptNone {
			fail(errLoginRequired, "the user is not signed in")
			return
		}
		returnTo := paths.Authorize + "?" + r.URL.RawQuery
		if r.Method == http.MethodPost {
			returnTo = paths.Authorize + "?" + params.Encode()
		}
		s.sessions.RedirectToSignIn(w, r, returnTo)
		return
	}
	req.SessionID = sess.ID
	s.touchClient(ctx, client)
	// Pattern 2: the user connects the upstream accounts this client's MCP servers need
	// before the client gets a code, then comes back to this request.
	if s.upstream != nil && !promptNone {
		returnTo := paths.Authorize + "?" + r.URL.RawQuery
		if r.Method == http.MethodPost {
			returnTo = paths.Authorize + "?" + params.Encode()
		}
		if s.upstream.BeforeCode(w, r, sess, req.Resource, returnTo) {
			return
		}
	}

	if !s.showsConsent(client) {
		s.issueCode(w, r, req, sess)
		return
	}
	if promptNone {
		// This server asks for consent every time, so consent is required. Tell
		// the client only if this user has approved it before (a live grant of
		// this session): otherwise the answer would reveal to anyone who
		// registered a client that the user is signed in.
		if s.approvedInSession(ctx, sess.ID, client.ID) {
			s.redirectResult(w, r, redirectURI, h.Origin, state, url.Values{"error": {errConsentRequired}, "error_description": {"the user must approve this application"}})
			return
		}
		fail(errConsentRequired, "the user must approve this application")
		return
	}
	payload, err := json.Marshal(req)
	if err != nil {
		fail(errServerError, "the request could not be recorded")
		return
	}
	handle := secret.NewToken()
	if err := s.store.PutOneTime(ctx, store.OneTime{
		Hash:      secret.Hash(handle),
		Kind:      oneTimeKindConsent,
		Payload:   payload,
		ExpiresAt: s.now().Add(consentLifetime),
	}); err != nil {
		s.log.ErrorContext(ctx, "oauth: store consent request", "error", err)
		fail(errTemporarilyUnavailable, "the request could not be recorded; try again in a moment")
		return
	}
	renderConsent(w, r, consentPage{
		ClientName:    displayName(client),
		Unverified:    client.Name != "" && client.Kind != store.ClientStatic,
		ClientID:      client.ID,
		User:          userLabel(sess),
		Issuer:        h.Origin,
		RedirectHost:  redirectLabel(redirectURI),
		Publisher:     publisherOf(client),
		LocalRedirect: isLocalRedirect(redirectURI),
		RedirectURIs:  registeredRedirects(client),
		Resource:      resourceLabel(req.Resource),
		AllServers:    req.Resource == "",
		Scope:         req.Scope,
		Action:        paths.Consent,
		CSRF:          s.sessions.CSRFToken(r),
		Request:       handle,
	})
}

// redirectsErrorsBeforeConsent reports whether authorization errors that
// arise before the user has seen the consent page may be sent to c's redirect
// URI. Only operator-configured (static) clients: a dynamically registered or
// metadata-document client's redirect URI was chosen by whoever registered it,
// so redirecting there would make the gateway an open redirector.
func redirectsErrorsBeforeConsent(c store.Client) bool { return c.Kind == store.ClientStatic }

// renderAuthorizeError shows an authorization error that is not sent to the
// client. prompt=none errors share one page whatever the reason, so that the
// page says nothing about whether the user is signed in.
func (s *Server) renderAuthorizeError(w http.ResponseWriter, r *http.Request, c store.Client, code, desc string) {
	s.log.InfoContext(r.Context(), "oauth: authorization request refused", "client_id", c.ID, "error", code, "reason", desc)
	status := http.StatusBadRequest
	title := "Invalid authorization request"
	msg := "The application sent an authorization request this gateway does not accept (" + code + ": " + desc + "), so you are not being sent back to it. Start again from the application; if this persists, report it to the application's developer."
	switch code {
	case errLoginRequired, errConsentRequired:
		title = "Sign-in and approval needed"
		msg = "The application asked to be let in without showing you a sign-in or approval page (prompt=none). Start again from the application to sign in and approve it."
	case errServerError:
		status = http.StatusInternalServerError
		title = "Something went wrong"
		msg = "The authorization request could not be processed. Try again later."
	case errTemporarilyUnavailable:
		renderUnavailable(w, r, "The authorization request could not be processed. Try again in a moment.", c.ID)
		return
	}
	renderError(w, r, status, title, msg, c.ID)
}

// approvedInSession reports whether the user of sessionID has approved
// clientID in that session: a grant of it that is neither revoked nor
// expired. A storage error counts as no.
func (s *Server) approvedInSession(ctx context.Context, sessionID, clientID string) bool {
	grants, err := s.store.ListGrantsBySession(ctx, sessionID)
	if err != nil {
		s.log.WarnContext(ctx, "oauth: list grants of session", "error", err)
		return false
	}
	now := s.now()
	for _, g := range grants {
		if g.ClientID == clientID && g.RevokedAt.IsZero() && (g.ExpiresAt.IsZero() || now.Before(g.ExpiresAt)) {
			return true
		}
	}
	return false
}

// validateAuthParams checks the parameters after client_id and
// redirect_uri. It returns an OAuth error code and description on failure.
func (s *Server) validateAuthParams(params url.Values, client store.Client, h *hosts.Host) (authRequest, string, string) {
	var req authRequest
	for name, vals := range params {
		if len(vals) > 1 && name != "resource" { // several resource values must name one route
			return req, errInvalidRequest, "parameter " + printable(name) + " is repeated"
		}
	}
	if params.Has("request") {
		return req, errRequestNotSupported, "request objects are not supported"
	}
	if params.Has("request_uri") {
		return req, errRequestURINotSupported, "request_uri is not supported"
	}
	if len(params.Get("state")) > maxStateLen {
		return req, errInvalidRequest, "state is too long"
	}
	switch rt := params.Get("response_type"); {
	case rt == "":
		return req, errInvalidRequest, "response_type is required"
	case rt != responseTypeCode:
		return req, errUnsupportedResponseType, "only response_type=code is supported"
	}
	if rm := params.Get("response_mode"); rm != "" && rm != "query" {
		return req, errInvalidRequest, "only response_mode=query is supported"
	}
	if !slices.Contains(client.ResponseTypes, responseTypeCode) || !slices.Contains(client.GrantTypes, grantAuthorizationCode) {
		return req, errUnauthorizedClient, "the client is not registered for the authorization code flow"
	}
	challenge := params.Get("code_challenge")
	if challenge == "" {
		return req, errInvalidRequest, "code_challenge is required (PKCE with S256)"
	}
	if params.Get("code_challenge_method") != "S256" {
		return req, errInvalidRequest, "code_challenge_method must be S256"
	}
	if b, err := base64.RawURLEncoding.DecodeString(challenge); err != nil || len(b) != 32 {
		return req, errInvalidRequest, "code_challenge must be the base64url SHA-256 of the code verifier"
	}
	req.CodeChallenge = challenge
	if params.Has("resource") {
		res, oerr := resolveResources(h, params["resource"])
		if oerr != nil {
			return req, oerr.code, oerr.description
		}
		req.Resource = res
	}
	if req.Resource == "" {
		req.Resource = s.defaultResource(client.ID)
	}
	if !s.clientMayUse(client.ID, req.Resource) {
		return req, errInvalidTarget, "this client may obtain tokens only for the MCP servers the operator listed for it; name one of them as resource"
	}
	if req.Resource != "" && !hostServes(h, req.Resource) {
		return req, errInvalidTarget, "this client's MCP server is on another host: authorize at that host"
	}
	scopes, ok := parseScope(params.Get("scope"))
	if !ok {
		return req, errInvalidScope, "scope is malformed"
	}
	req.Scope = grantScope(scopes, client)
	return req, "", ""
}

// consentAction is what a consent form submission asks for.
const (
	actionApprove = "approve"
	actionDeny    = "deny"
)

// handleConsent receives the consent form.
func (s *Server) handleConsent(w http.ResponseWriter, r *http.Request, h *hosts.Host) {
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseForm(); err != nil {
		renderError(w, r, http.StatusBadRequest, "Invalid request", "The form could not be read.", "")
		return
	}
	form := r.PostForm
	sess, err := s.sessions.Current(r)
	if err != nil {
		s.log.ErrorContext(ctx, "oauth: read browser session", "error", err)
		renderUnavailable(w, r, "Your session could not be read. Try again in a moment.", "")
		return
	}
	if sess == nil || (!sess.ExpiresAt.IsZero() && !s.now().Before(sess.ExpiresAt)) {
		renderError(w, r, http.StatusUnauthorized, "Signed out", "You are no longer signed in. Start again from the application.", "")
		return
	}
	if !s.sessions.VerifyCSRF(r, form.Get("csrf")) {
		renderError(w, r, http.StatusForbidden, "Invalid form", "The form was not issued to this browser session. Start again from the application.", "")
		return
	}
	handle := form.Get("request")
	if handle == "" {
		renderError(w, r, http.StatusBadRequest, "Invalid form", "The form is incomplete.", "")
		return
	}
	// Check, then spend: the pending consent is looked at without consuming it
	// and spent only once this session, on this host, gave a valid answer, so
	// another session that learned the handle cannot burn the user's request.
	hash := secret.Hash(handle)
	ot, err := s.store.GetOneTime(ctx, hash, oneTimeKindConsent, s.now())
	if errors.Is(err, store.ErrNotFound) {
		renderConsentExpired(w, r)
		return
	}
	if err != nil {
		s.log.ErrorContext(ctx, "oauth: get consent request", "error", err)
		renderUnavailable(w, r, "The approval could not be processed. Try again in a moment.", "")
		return
	}
	var req authRequest
	if err := json.Unmarshal(ot.Payload, &req); err != nil {
		renderError(w, r, http.StatusInternalServerError, "Something went wrong", "The approval request is corrupt.", "")
		return
	}
	if req.SessionID != sess.ID || req.Issuer != h.Origin {
		s.log.WarnContext(ctx, "oauth: consent answered by another session or host", "client_id", req.ClientID)
		renderError(w, r, http.StatusForbidden, "Invalid form", "This approval request belongs to another session. Start again from the application.", "")
		return
	}
	action := form.Get("action")
	if action != actionApprove && action != actionDeny {
		renderError(w, r, http.StatusBadRequest, "Invalid form", "Choose Approve or Deny.", "")
		return
	}
	// The client may have been deleted or its document changed meanwhile.
	client, err := s.lookupClient(ctx, req.ClientID)
	if err != nil && !errors.Is(err, errUnknownClient) && !errors.Is(err, errClientDocument) && !errors.Is(err, errClientIDDomain) {
		s.log.ErrorContext(ctx, "oauth: client lookup", "error", err)
		renderUnavailable(w, r, "The approval could not be processed. Try again in a moment.", req.ClientID)
		return
	}
	if err != nil || !matchRedirectURI(client.RedirectURIs, req.RedirectURI) {
		renderError(w, r, http.StatusBadRequest, "Unknown application", "This application is no longer registered here. Start again from the application.", req.ClientID)
		return
	}
	// Spend: of concurrent answers, exactly one takes the request.
	if _, err := s.store.TakeOneTime(ctx, hash, oneTimeKindConsent, s.now()); errors.Is(err, store.ErrNotFound) {
		renderConsentExpired(w, r)
		return
	} else if err != nil {
		s.log.ErrorContext(ctx, "oauth: take consent request", "error", err)
		renderUnavailable(w, r, "The approval could not be processed. Try again in a moment.", "")
		return
	}
	if action == actionApprove {
		s.log.InfoContext(ctx, "oauth: consent approved", "client_id", req.ClientID, "session_id", sess.ID, "resource", req.Resource)
		s.issueCode(w, r, req, sess)
		return
	}
	s.log.InfoContext(ctx, "oauth: consent denied", "client_id", req.ClientID)
	s.redirectResult(w, r, req.RedirectURI, req.Issuer, req.State, url.Values{"error": {errAccessDenied}, "error_description": {"the user denied access"}})
}

// renderConsentExpired is the page of a consent answer whose request is gone.
func renderConsentExpired(w http.ResponseWriter, r *http.Request) {
	renderError(w, r, http.StatusBadRequest, "Request expired", "This approval request has expired or was already answered. Start again from the application.", "")
}

// issueCode stores a fresh authorization code for req and sends the browser
// back to the client with it.
func (s *Server) issueCode(w http.ResponseWriter, r *http.Request, req authRequest, sess *store.Session) {
	now := s.now()
	code := secret.NewToken()
	err := s.store.CreateAuthCode(r.Context(), store.AuthCode{
		Hash:          secret.Hash(code),
		ClientID:      req.ClientID,
		SessionID:     sess.ID,
		Subject:       sess.Subject,
		RedirectURI:   req.RedirectURI,
		CodeChallenge: req.CodeChallenge,
		Scope:         req.Scope,
		Resource:      req.Resource,
		CreatedAt:     now,
		ExpiresAt:     now.Add(codeLifetime),
	})
	if err != nil {
		s.log.ErrorContext(r.Context(), "oauth: store authorization code", "error", err)
		s.redirectResult(w, r, req.RedirectURI, req.Issuer, req.State, url.Values{"error": {errTemporarilyUnavailable}, "error_description": {"the authorization code could not be stored; try again in a moment"}})
		return
	}
	s.redirectResult(w, r, req.RedirectURI, req.Issuer, req.State, url.Values{"code": {code}})
}

// redirectResult sends the browser to the verified redirect URI with the
// authorization response params, state and iss (RFC 9207).
func (s *Server) redirectResult(w http.ResponseWriter, r *http.Request, redirectURI, issuer, state string, params url.Values) {
	if state != "" {
		params.Set("state", state)
	}
	params.Set("iss", issuer)
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Location", withQuery(redirectURI, params))
	status := http.StatusFound
	if r.Method == http.MethodPost {
		status = http.StatusSeeOther
	}
	w.WriteHeader(status)
}

func displayName(c store.Client) string {
	if c.Name != "" {
		return c.Name
	}
	if c.Kind == store.ClientMetadataDocument {
		if u, err := url.Parse(c.ID); err == nil {
			return u.Hostname()
		}
	}
	return "An unnamed application"
}

// publisherOf is the host of a metadata-document client's URL: who vouches for its name.
func publisherOf(c store.Client) string {
	if c.Kind != store.ClientMetadataDocument {
		return ""
	}
	if u, err := url.Parse(c.ID); err == nil {
		return u.Host
	}
	return ""
}

// isLocalRedirect reports whether the redirect URI is on a loopback host.
func isLocalRedirect(redirectURI string) bool {
	u, err := url.Parse(redirectURI)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && isLoopbackRedirectHost(u.Hostname())
}

// registeredRedirects lists the redirect URIs the consent page shows: those of clients that
// anyone may set up (dynamic and metadata-document clients).
func registeredRedirects(c store.Client) []string {
	if c.Kind == store.ClientStatic {
		return nil
	}
	return c.RedirectURIs
}

func userLabel(s *store.Session) string {
	switch {
	case s.Email != "":
		return s.Email
	case s.Name != "":
		return s.Name
	}
	return s.Subject
}

func redirectLabel(redirectURI string) string {
	u, err := url.Parse(redirectURI)
	if err != nil {
		return redirectURI
	}
	if u.Host != "" {
		return u.Scheme + "://" + u.Host
	}
	return u.Scheme + ":"
}

func resourceLabel(res string) string {
	if res == "" {
		return "every MCP server of this gateway you may use"
	}
	return res
}
