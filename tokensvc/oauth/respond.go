package oauth

import (
	"encoding/json"
	"net/http"
)

// OAuth error codes used by this server (RFC 6749 §4.1.2.1 and §5.2,
// RFC 7591 §3.2.2, RFC 8707 §2, OpenID Connect prompt=none errors).
const (
	errInvalidRequest          = "invalid_request"
	errInvalidClient           = "invalid_client"
	errInvalidGrant            = "invalid_grant"
	errUnauthorizedClient      = "unauthorized_client"
	errUnsupportedGrantType    = "unsupported_grant_type"
	errUnsupportedResponseType = "unsupported_response_type"
	errInvalidScope            = "invalid_scope"
	errInvalidTarget           = "invalid_target"
	errAccessDenied            = "access_denied"
	errServerError             = "server_error"
	errTemporarilyUnavailable  = "temporarily_unavailable"
	errLoginRequired           = "login_required"
	errConsentRequired         = "consent_required"
	errInvalidRedirectURI      = "invalid_redirect_uri"
	errInvalidClientMetadata   = "invalid_client_metadata"
	errRequestNotSupported     = "request_not_supported"
	errRequestURINotSupported  = "request_uri_not_supported"
)

// oauthError is an error answered to the client as an OAuth error response.
// Its description must never contain a token or secret.
type oauthError struct {
	code        string
	description string
	status      int
	// basicChallenge adds WWW-Authenticate: Basic (invalid_client after an
	// attempt with HTTP Basic, RFC 6749 §5.2).
	basicChallenge bool
}

func (e *oauthError) Error() string { return e.code + ": " + e.description }

// newError returns an OAuth error with the status RFC 6749 §5.2 gives it.
func newError(code, description string) *oauthError {
	status := http.StatusBadRequest
	switch code {
	case errInvalidClient:
		status = http.StatusUnauthorized
	case errServerError:
		status = http.StatusInternalServerError
	case errTemporarilyUnavailable:
		status = http.StatusServiceUnavailable
	}
	return &oauthError{code: code, description: description, status: status}
}

// errorBody is the JSON error response body.
type errorBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// writeOAuthError answers e as a JSON error response.
func writeOAuthError(w http.ResponseWriter, e *oauthError) {
	setRetryAfter(w, e)
	if e.basicChallenge {
		w.Header().Set("WWW-Authenticate", `Basic realm="gateway", charset="UTF-8"`)
	}
	writeJSON(w, e.status, errorBody{Error: e.code, Description: e.description})
}

// writeJSON answers v as JSON that no cache may keep.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"server_error"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
