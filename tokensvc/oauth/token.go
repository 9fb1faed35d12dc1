package oauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// tokenResponse is the RFC 6749 §5.1 response.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope,omitempty"`
}

// readForm reads an application/x-www-form-urlencoded POST body of at most
// maxBodyBytes, refusing repeated parameters. Query parameters are ignored.
func readForm(w http.ResponseWriter, r *http.Request) (url.Values, *oauthError) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		return nil, newError(errInvalidRequest, "the body must be application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseForm(); err != nil {
		return nil, newError(errInvalidRequest, "the body is malformed or too large")
	}
	for name, vals := range r.PostForm {
		if len(vals) > 1 && name != "resource" { // RFC 8707 allows several resource values
			return nil, newError(errInvalidRequest, "parameter "+printable(name)+" is repeated")
		}
	}
	return r.PostForm, nil
}

// handleToken is the token endpoint (RFC 6749 §3.2).
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request, h *hosts.Host) {
	form, client, ok := s.clientPost(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	var (
		resp tokenResponse
		oerr *oauthError
	)
	switch gt := form.Get("grant_type"); gt {
	case grantAuthorizationCode:
		resp, oerr = s.grantAuthorizationCode(ctx, h, client, form)
	case grantRefreshToken:
		resp, oerr = s.grantRefreshToken(ctx, h, client, form)
	case grantClientCredentials:
		resp, oerr = s.grantClientCredentials(ctx, h, client, form)
	case "":
		oerr = newError(errInvalidRequest, "grant_type is required")
	default:
		oerr = newError(errUnsupportedGrantType, "grant_type must be authorization_code, refresh_token or client_credentials")
	}
	if oerr != nil {
		if oerr.code == errInvalidGrant {
			s.log.InfoContext(ctx, "oauth: token request refused", "client_id", client.ID, "grant_type", form.Get("grant_type"), "reason", oerr.description)
		}
		writeOAuthError(w, oerr)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) grantAuthorizationCode(ctx context.Context, h *hosts.Host, client store.Client, form url.Values) (tokenResponse, *oauthError) {
	if !slices.Contains(client.GrantTypes, grantAuthorizationCode) {
		return tokenResponse{}, newError(errUnauthorizedClient, "the client is not registered for the authorization_code grant")
	}
	code := form.Get("code")
	if code == "" {
		return tokenResponse{}, newError(errInvalidRequest, "code is required")
	}
	// Check, then spend: every binding of the code is verified on a look that
	// does not consume it, so a caller that is not its client, or lacks the
	// PKCE verifier, cannot burn the rightful client's code.
	hash := secret.Hash(code)
	ac, err := s.store.GetAuthCode(ctx, hash, s.now())
	if errors.Is(err, store.ErrNotFound) {
		s.revokeReplayedCode(ctx, code)
		return tokenResponse{}, newError(errInvalidGrant, "the authorization code is invalid, expired or already used")
	}
	if err != nil {
		s.log.ErrorContext(ctx, "oauth: get authorization code", "error", err)
		return tokenResponse{}, unavailable("the authorization code could not be checked")
	}
	if ac.ClientID != client.ID {
		return tokenResponse{}, newError(errInvalidGrant, "the authorization code was issued to another client")
	}
	if form.Get("redirect_uri") != ac.RedirectURI {
		return tokenResponse{}, newError(errInvalidGrant, "redirect_uri differs from the one of the authorization request")
	}
	if !verifyPKCE(form.Get("code_verifier"), ac.CodeChallenge) {
		return tokenResponse{}, newError(errInvalidGrant, "code_verifier does not match the code_challenge")
	}
	if ac.Resource != "" && !hostServes(h, ac.Resource) {
		return tokenResponse{}, newError(errInvalidGrant, "the authorization code was issued by another issuer")
	}
	tokenResource, oerr := narrowResource(h, ac.Resource, form)
	if oerr != nil {
		return tokenResponse{}, oerr
	}
	if !s.clientMayUse(client.ID, tokenResource) {
		return tokenResponse{}, newError(errInvalidTarget, "this client may not obtain tokens for this MCP server")
	}
	// Spend: of concurrent redemptions that all passed the checks, exactly one
	// takes the code (atomically, across replicas); the others see it gone, as
	// a replay.
	if _, err := s.store.TakeAuthCode(ctx, hash, s.now()); errors.Is(err, store.ErrNotFound) {
		s.revokeReplayedCode(ctx, code)
		return tokenResponse{}, newError(errInvalidGrant, "the authorization code is invalid, expired or already used")
	} else if err != nil {
		s.log.ErrorContext(ctx, "oauth: take authorization code", "error", err)
		return tokenResponse{}, unavailable("the authorization code could not be checked")
	}
	sess, oerr := s.liveSession(ctx, ac.SessionID)
	if oerr != nil {
		return tokenResponse{}, oerr
	}
	resp, issued, oerr := s.issueTokens(ctx, client, sess, ac.Scope, ac.Resource, tokenResource)
	if oerr == nil {
		s.events.TokensIssued()
		s.rememberRedeemedCode(ctx, code, issued)
	}
	return resp, oerr
}

func (s *Server) grantRefreshToken(ctx context.Context, h *hosts.Host, client store.Client, form url.Values) (tokenResponse, *oauthError) {
	if !slices.Contains(client.GrantTypes, grantRefreshToken) {
		return tokenResponse{}, newError(errUnauthorizedClient, "the client is not registered for the refresh_token grant")
	}
	raw := form.Get("refresh_token")
	if raw == "" {
		return tokenResponse{}, newError(errInvalidRequest, "refresh_token is required")
	}
	hash := secret.Hash(raw)
	now := s.now()
	old, grant, err := s.store.GetRefreshToken(ctx, hash, now)
	if errors.Is(err, store.ErrNotFound) {
		return tokenResponse{}, newError(errInvalidGrant, "the refresh token is invalid, expired or revoked")
	}
	if err != nil {
		s.log.ErrorContext(ctx, "oauth: get refresh token", "error", err)
		return tokenResponse{}, unavailable("the refresh token could not be checked")
	}
	reuse := s.reuseInterval
	if !old.UsedAt.IsZero() && grant.ClientID == client.ID && s.unanswered.was(hash, old.UsedAt, now) {
		reuse = max(reuse, now.Sub(old.UsedAt)+time.Minute) // the retry of a rotation never answered
	}
	if !old.UsedAt.IsZero() && (grant.ClientID != client.ID || !reuseGranted(reuse, old.UsedAt, now)) {
		s.events.RefreshReused()
		s.revokeReusedGrant(ctx, grant.ID, client.ID)
		return tokenResponse{}, newError(errInvalidGrant, "the refresh token was already used; the grant is revoked")
	}
	if grant.ClientID != client.ID {
		return tokenResponse{}, newError(errInvalidGrant, "the refresh token was issued to another client")
	}
	if grant.Resource != "" && !hostServes(h, grant.Resource) {
		return tokenResponse{}, newError(errInvalidGrant, "the refresh token was issued by another issuer")
	}
	tokenResource, oerr := narrowResource(h, grant.Resource, form)
	if oerr != nil {
		return tokenResponse{}, oerr
	}
	if !s.clientMayUse(client.ID, tokenResource) {
		return tokenResponse{}, newError(errInvalidTarget, "this client may not obtain tokens for this MCP server")
	}
	scope := grant.Scope
	if form.Has("scope") {
		req, ok := parseScope(form.Get("scope"))
		if !ok {
			return tokenResponse{}, newError(errInvalidScope, "scope is malformed")
		}
		if scope, ok = narrowScope(grant.Scope, req); !ok {
			return tokenResponse{}, newError(errInvalidScope, "scope exceeds the scope of the grant")
		}
	}
	var sess store.Session
	if grant.SessionID != "" {
		sess, oerr = s.liveSession(ctx, grant.SessionID)
		if oerr != nil {
			if oerr.code == errInvalidGrant {
				_ = s.store.RevokeGrant(ctx, grant.ID, s.now())
			}
			return tokenResponse{}, oerr
		}
	} else {
		sess = store.Session{Subject: grant.Subject}
	}
	// The access token is stored before the rotation: once the rotation is committed, no
	// store write is left that could fail and turn the answer into a 503 after the client's
	// refresh token was spent. The client would retry with it, maybe only after the reuse
	// interval (the database down for longer), and reuse detection would revoke the family.
	// A token stored here for a rotation that then fails is never handed out.
	at, exp, oerr := s.createAccessToken(ctx, store.AccessToken{
		GrantID:   grant.ID,
		ClientID:  client.ID,
		SessionID: grant.SessionID,
		Subject:   sess.Subject,
		Scope:     scope,
		Resource:  tokenResource,
	}, sess.ExpiresAt, grant.ExpiresAt)
	if oerr != nil {
		return tokenResponse{}, oerr
	}
	next := s.successorToken(raw)
	rotateAt := s.now()
	_, err = s.store.RotateRefreshTokenWithin(ctx, hash, store.RefreshToken{
		Hash:      secret.Hash(next),
		CreatedAt: now,
		ExpiresAt: grant.ExpiresAt,
	}, rotateAt, reuse)
	switch {
	case errors.Is(err, store.ErrRefreshReused):
		s.events.RefreshReused()
		s.log.WarnContext(ctx, "oauth: refresh token reuse; grant revoked", "client_id", client.ID)
		return tokenResponse{}, newError(errInvalidGrant, "the refresh token was already used; the grant is revoked")
	case errors.Is(err, store.ErrNotFound):
		return tokenResponse{}, newError(errInvalidGrant, "the refresh token is invalid, expired or revoked")
	case err != nil:
		s.log.ErrorContext(ctx, "oauth: rotate refresh token", "error", err)
		s.unanswered.add(hash, rotateAt)
		return tokenResponse{}, unavailable("the refresh token could not be rotated")
	}
	s.events.TokensRefreshed()
	return s.tokenResponse(at, exp, next, scope), nil
}

// revokeReusedGrant revokes a grant whose rotated refresh token came back.
func (s *Server) revokeReusedGrant(ctx context.Context, grantID, clientID string) {
	s.log.WarnContext(ctx, "oauth: refresh token reuse; grant revoked", "client_id", clientID, "grant_id", grantID)
	if err := s.store.RevokeGrant(ctx, grantID, s.now()); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.ErrorContext(ctx, "oauth: revoke reused grant", "grant_id", grantID, "error", err)
	}
}

// narrowResource returns the resource a token request's optional resource
// parameter selects: the bound one itself, or — when bound is empty — one MCP
// server of h (RFC 8707 §2.2 lets a token request narrow, never widen).
func narrowResource(h *hosts.Host, bound string, form url.Values) (string, *oauthError) {
	if !form.Has("resource") {
		return bound, nil
	}
	res, oerr := resolveResources(h, form["resource"])
	if oerr != nil {
		return "", oerr
	}
	if bound != "" && res != bound {
		return "", newError(errInvalidTarget, "resource differs from the one authorized")
	}
	return res, nil
}

// verifyPKCE checks an S256 code verifier (RFC 7636 §4.6) in constant time.
func verifyPKCE(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	for i := 0; i < len(verifier); i++ {
		c := verifier[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	sum := sha256.Sum256([]byte(verifier))
	want := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(want), []byte(challenge)) == 1
}

// liveSession returns the session a code or grant was issued in. A session
// past its expiry is revalidated with the identity provider; a refusal, or a
// session that is gone or revoked, is invalid_grant.
func (s *Server) liveSession(ctx context.Context, id string) (store.Session, *oauthError) {
	if id == "" {
		return store.Session{}, newError(errInvalidGrant, "the grant has no sign-in session")
	}
	sess, err := s.store.GetSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, newError(errInvalidGrant, "the sign-in session has ended")
	}
	if err != nil {
		s.log.ErrorContext(ctx, "oauth: get session", "error", err)
		return store.Session{}, unavailable("the sign-in session could not be read")
	}
	if !sess.RevokedAt.IsZero() {
		return store.Session{}, newError(errInvalidGrant, "the sign-in session has ended")
	}
	if sess.ExpiresAt.IsZero() || s.now().Before(sess.ExpiresAt) {
		return sess, nil
	}
	ns, err := s.sessions.Revalidate(ctx, id)
	switch {
	case errors.Is(err, ErrIDPRefused), errors.Is(err, store.ErrNotFound):
		s.log.InfoContext(ctx, "oauth: identity provider refused session revalidation", "session_id", id)
		return store.Session{}, newError(errInvalidGrant, "the identity provider no longer accepts this sign-in; sign in again")
	case err != nil:
		s.log.WarnContext(ctx, "oauth: session revalidation failed", "session_id", id, "error", err)
		return store.Session{}, newError(errTemporarilyUnavailable, "the identity provider could not be reached; try again later")
	case ns == nil || (!ns.ExpiresAt.IsZero() && !s.now().Before(ns.ExpiresAt)) || !ns.RevokedAt.IsZero():
		return store.Session{}, newError(errInvalidGrant, "the sign-in session could not be renewed; sign in again")
	}
	return *ns, nil
}

// issueTokens issues an access token (bound to tokenResource) and, when the
// client may refresh, a new grant (bound to grantResource) with its first
// refresh token.
func (s *Server) issueTokens(ctx context.Context, client store.Client, sess store.Session, scope, grantResource, tokenResource string) (tokenResponse, issuedTokens, *oauthError) {
	now := s.now()
	var (
		grantID, refresh string
		grantExpiry      time.Time
	)
	if slices.Contains(client.GrantTypes, grantRefreshToken) {
		grantID = secret.NewToken()
		refresh = secret.NewToken()
		grantExpiry = now.Add(s.refreshTTL)
		err := s.store.CreateGrant(ctx, store.Grant{
			ID:        grantID,
			ClientID:  client.ID,
			SessionID: sess.ID,
			Subject:   sess.Subject,
			Scope:     scope,
			Resource:  grantResource,
			CreatedAt: now,
			ExpiresAt: grantExpiry,
		}, store.RefreshToken{Hash: secret.Hash(refresh), CreatedAt: now, ExpiresAt: grantExpiry})
		if errors.Is(err, store.ErrNotFound) {
			return tokenResponse{}, issuedTokens{}, newError(errInvalidGrant, "the sign-in session has ended")
		}
		if err != nil {
			s.log.ErrorContext(ctx, "oauth: create grant", "error", err)
			return tokenResponse{}, issuedTokens{}, unavailable("the grant could not be stored")
		}
	}
	at, exp, oerr := s.createAccessToken(ctx, store.AccessToken{
		GrantID:   grantID,
		ClientID:  client.ID,
		SessionID: sess.ID,
		Subject:   sess.Subject,
		Scope:     scope,
		Resource:  tokenResource,
	}, sess.ExpiresAt, grantExpiry)
	if oerr != nil {
		return tokenResponse{}, issuedTokens{}, oerr
	}
	s.log.InfoContext(ctx, "oauth: tokens issued", "client_id", client.ID, "grant_id", grantID, "resource", tokenResource)
	return s.tokenResponse(at, exp, refresh, scope), issuedTokens{GrantID: grantID, AccessHash: secret.Hash(at)}, nil
}

// createAccessToken fills in t's hash and times and stores it. The token
// expires after the access token lifetime, but never after the given limits
// (session and grant expiry; zero means none).
func (s *Server) createAccessToken(ctx context.Context, t store.AccessToken, limits ...time.Time) (string, time.Time, *oauthError) {
	now := s.now()
	exp := now.Add(s.accessTTL)
	for _, l := range limits {
		if !l.IsZero() && l.Before(exp) {
			exp = l
		}
	}
	tok := secret.NewToken()
	t.Hash, t.CreatedAt, t.ExpiresAt = secret.Hash(tok), now, exp
	if err := s.store.CreateAccessToken(ctx, t); err != nil {
		s.log.ErrorContext(ctx, "oauth: create access token", "error", err)
		return "", time.Time{}, unavailable("the access token could not be stored")
	}
	return tok, exp, nil
}

func (s *Server) tokenResponse(access string, exp time.Time, refresh, scope string) tokenResponse {
	secs := int64((exp.Sub(s.now()) + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	return tokenResponse{AccessToken: access, TokenType: "Bearer", ExpiresIn: secs, RefreshToken: refresh, Scope: scope}
}

// redeemedCodeMemory is how long a redeemed code is remembered so that a
// replay revokes what it yielded (RFC 6749 §4.1.2).
const (
	redeemedCodeMemory = 10 * time.Minute
	oneTimeKindCode    = "redeemed_code"
)

// issuedTokens names what a code redemption produced.
type issuedTokens struct {
	GrantID    string `json:"g,omitempty"`
	AccessHash []byte `json:"a"`
}

// redeemedKey is the OneTime key remembering a redeemed code; it is
// domain-separated from every other hashed value.
func redeemedKey(code string) []byte { return secret.Hash("redeemed-code:" + code) }

// rememberRedeemedCode records what code yielded, for revokeReplayedCode.
func (s *Server) rememberRedeemedCode(ctx context.Context, code string, issued issuedTokens) {
	payload, _ := json.Marshal(issued)
	err := s.store.PutOneTime(ctx, store.OneTime{
		Hash: redeemedKey(code), Kind: oneTimeKindCode, Payload: payload,
		ExpiresAt: s.now().Add(redeemedCodeMemory),
	})
	if err != nil {
		s.log.WarnContext(ctx, "oauth: remember redeemed code", "error", err)
	}
}

// revokeReplayedCode revokes the tokens issued for code if it had been
// redeemed: a second redemption means the code leaked (RFC 6749 §4.1.2,
// RFC 9700 §4.5).
func (s *Server) revokeReplayedCode(ctx context.Context, code string) {
	ot, err := s.store.TakeOneTime(ctx, redeemedKey(code), oneTimeKindCode, s.now())
	if err != nil {
		return
	}
	var issued issuedTokens
	if json.Unmarshal(ot.Payload, &issued) != nil {
		return
	}
	s.events.CodeReplayed()
	s.log.WarnContext(ctx, "oauth: authorization code replayed; revoking its tokens", "grant_id", issued.GrantID)
	if issued.GrantID != "" {
		if err := s.store.RevokeGrant(ctx, issued.GrantID, s.now()); err != nil && !errors.Is(err, store.ErrNotFound) {
			s.log.ErrorContext(ctx, "oauth: revoke grant of replayed code", "error", err)
		}
	}
	if len(issued.AccessHash) > 0 {
		if err := s.store.DeleteAccessToken(ctx, issued.AccessHash); err != nil && !errors.Is(err, store.ErrNotFound) {
			s.log.ErrorContext(ctx, "oauth: delete access token of replayed code", "error", err)
		}
	}
}
