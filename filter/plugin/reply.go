package plugin

import (
	"strings"
	"unicode/utf8"

	"github.com/mcpmesh/gateway/shared/ascii"
	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/jsontext"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/shared/pluginconf"
)

// reply answers the stream locally, once.
func (s *stream) reply(status int, headers []Header, body []byte) {
	if s.replied {
		return
	}
	s.done, s.replied = true, true
	headers = append(headers, Header{"cache-control", "no-store"})
	if s.origin != "" && s.route != nil && s.route.Kind == pluginconf.KindServer {
		headers = append(headers, corsResponseHeaders(s.origin)...)
	}
	s.h.SendLocalResponse(status, headers, body)
}

// replyError answers with a small JSON error object.
func (s *stream) replyError(status int, code, description string) {
	body := make([]byte, 0, 96+len(description))
	body = append(body, `{"error":`...)
	body = jsontext.AppendString(body, code)
	body = append(body, `,"error_description":`...)
	body = jsontext.AppendString(body, description)
	if id := s.requestID(); id != "" {
		body = append(body, `,"request_id":`...)
		body = jsontext.AppendString(body, id)
	}
	body = append(body, '}')
	s.reply(status, replyHeaders("application/json"), body)
}

// replyHeaders returns a local reply's headers with its Content-Type, with room for what reply
// adds (Cache-Control and the three CORS headers), so that they take one allocation.
func replyHeaders(contentType string) []Header {
	h := make([]Header, 1, 5)
	h[0] = Header{"content-type", contentType}
	return h
}

func (s *stream) replyJSONRPCError(status int, body []byte) {
	s.reply(status, replyHeaders("application/json"), body)
}

func (s *stream) replyTooLarge() {
	s.replyError(413, "request_too_large", "the request body exceeds the route's max_request_bytes")
}

// replyUnauthorized answers 401 with the RFC 9728 resource metadata URL that MCP clients
// start their OAuth flow from; errCode is "" when no credential was presented.
func (s *stream) replyUnauthorized(errCode, description string) {
	v := `Bearer ` + s.route.challenge
	if errCode != "" {
		v = `Bearer error="` + errCode + `", error_description="` + description + `", ` + s.route.challenge
	} else {
		errCode, description = "unauthorized", "an access token is required"
	}
	body := make([]byte, 0, 128)
	body = append(body, `{"error":`...)
	body = jsontext.AppendString(body, errCode)
	body = append(body, `,"error_description":`...)
	body = jsontext.AppendString(body, description)
	body = append(body, '}')
	s.reply(401, []Header{{"www-authenticate", v}, {"content-type", "application/json"}}, body)
}

// replyUpstreamRequired answers a request on an upstream_oauth2 route whose user has no
// usable Internal Token (never connected, disconnected, or refused by the provider): 401
// invalid_token with the route's resource metadata, so the MCP client signs in again and
// the authorization flow runs the upstream connect (docs/pattern-2-upstream-oauth.md).
func (s *stream) replyUpstreamRequired() {
	s.replyUnauthorized("invalid_token", "the upstream service must be connected again; sign in again")
}

// replySignIn sends a browser to sign in and back; other clients get 401.
func (s *stream) replySignIn() {
	method, _ := s.indexed(hMethod)
	accept, _ := s.indexed(hAccept)
	if (method == "GET" || method == "HEAD") && strings.Contains(accept, "text/html") {
		path, _ := s.indexed(hPath)
		loc := s.route.origin + paths.SignIn + "?return_to=" + queryEscape(path)
		s.reply(302, []Header{{"location", loc}}, nil)
		return
	}
	s.reply(401, []Header{{"www-authenticate", `Bearer realm="gateway"`}, {"content-type", "application/json"}},
		[]byte(`{"error":"unauthorized","error_description":"sign in at `+s.route.origin+paths.SignIn+`"}`))
}

// header returns the first value of a request header from the copy taken when the headers
// arrived: one host call for the whole map instead of one per lookup, and still readable after
// the headers have gone upstream (when Envoy no longer exposes them).
func (s *stream) header(name string) (string, bool) {
	for i := range s.hdrs {
		if isName(s.hdrs[i].Name, name) {
			return s.hdrs[i].Value, true
		}
	}
	return "", false
}

// isName reports whether the header name n is name. Names of the same length are told apart
// by their first and last bytes before the comparison of the rest, which is a call in the
// wasm filter (costing more than the rest of a header lookup).
func isName(n, name string) bool {
	return len(n) == len(name) && (len(n) == 0 || n[0] == name[0] && n[len(n)-1] == name[len(name)-1] && n == name)
}

// requestID is the proxy's request ID (x-request-id), read during the request-headers
// callback: Envoy no longer exposes the request headers once they have been continued.
func (s *stream) requestID() string {
	if !s.reqIDRead {
		s.readRequestID()
	}
	return s.reqID
}

func (s *stream) readRequestID() {
	s.reqIDRead = true
	if id, ok := s.indexed(hRequestID); ok {
		s.reqID = id
	} else if b, ok := s.h.Property("request", "id"); ok {
		s.reqID = string(b)
	}
}

// stripSessionCookie removes the gateway's cookies from the Cookie header so that no upstream
// sees (and could replay) them.
func (s *stream) stripSessionCookie() {
	raw, ok := s.indexed(hCookie)
	if !ok {
		return
	}
	kept := make([]string, 0, 4)
	for _, part := range strings.Split(raw, ";") {
		part = trimSpace(part)
		name, _, _ := strings.Cut(part, "=")
		if part == "" || isGatewayCookie(name) {
			continue
		}
		kept = append(kept, part)
	}
	if len(kept) == 0 {
		s.h.RemoveRequestHeader("cookie")
	} else {
		s.h.SetRequestHeader("cookie", strings.Join(kept, "; "))
	}
}

// isGatewayCookie reports whether a cookie name is one of the gateway's (_gateway_session on
// route hosts, _gateway_authn… on the authenticate host, which may share a host name).
func isGatewayCookie(name string) bool { return strings.HasPrefix(name, checkapi.CookiePrefix) }

// bearerToken extracts an RFC 6750 bearer token from Authorization.
func (s *stream) bearerToken() (string, bool) {
	v, ok := s.indexed(hAuthorization)
	if !ok {
		return "", false
	}
	return parseBearer(v)
}

// parseBearer parses "Bearer <token68>" (scheme case-insensitive).
//
// The scheme is the text before the first space; compared in ASCII, as no character but the
// letters of "bearer" folds to them (strings.EqualFold's Unicode folding would change nothing),
// it must be the first six bytes.
func parseBearer(v string) (string, bool) {
	v = trimSpace(v)
	if len(v) < len("bearer ") || v[6] != ' ' || !ascii.EqualFold(v[:6], "bearer") {
		return "", false
	}
	tok := v[7:]
	for tok != "" && tok[0] == ' ' {
		tok = tok[1:]
	}
	if len(tok) > 4096 || !isToken68(tok) {
		return "", false
	}
	return tok, true
}

// isToken68 reports whether s is a non-empty RFC 7235 token68: the alphabet of every
// credential the gateway issues.
func isToken68(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

// sessionCookie returns the gateway session cookie of the request.
func (s *stream) sessionCookie() (string, bool) {
	raw, ok := s.indexed(hCookie)
	if !ok {
		return "", false
	}
	return parseCookie(raw, checkapi.SessionCookie)
}

// parseCookie finds cookie name in a Cookie header value.
func parseCookie(raw, name string) (string, bool) {
	for _, part := range strings.Split(raw, ";") {
		k, v, ok := strings.Cut(trimSpace(part), "=")
		if !ok || k != name {
			continue
		}
		if v = strings.Trim(v, `"`); len(v) <= 512 && isToken68(v) {
			return v, true
		}
	}
	return "", false
}

// Verdicts of judgeContentType.
const (
	ctJSON        = iota // application/json, read as UTF-8 by the filter and the upstream alike
	ctNotJSON            // another media type, or none
	ctUnsupported        // application/json with parameters the upstream may honour, or twice
)

// contentType judges the request's Content-Type headers, found by the index.
func (s *stream) contentType() int {
	ct := ""
	if p := s.idx.lastContentType; p > 0 {
		ct = s.hdrs[p-1].Value
	}
	return judgeContentType(int(s.idx.nContentType), ct)
}

// judgeContentType judges the Content-Type of an MCP POST that has n Content-Type headers, the
// last of which is ct (docs/decisions.md, "Content-Type"). The filter reads the body as UTF-8
// JSON, but upstreams honour a declared charset (body-parser decodes utf-7, utf-16 and the rest
// of iconv), so that the same bytes could name another tool there. Only application/json alone,
// or with a single charset=utf-8 (any case, quoted or not), is read the same on both sides; any
// other parameter, a malformed one, or a second Content-Type header is unsupported.
func judgeContentType(n int, ct string) int {
	if n == 0 {
		return ctNotJSON
	}
	if len(ct) == len("application/json") && le64(ct) == le64("application/json") && le64(ct[8:]) == le64("application/json"[8:]) {
		// What MCP clients send, as the steps below would judge it, in two loads.
		if n > 1 {
			return ctUnsupported
		}
		return ctJSON
	}
	mt, params, hasParams := strings.Cut(ct, ";")
	if !ascii.EqualFold(trimOWS(mt), "application/json") {
		return ctNotJSON
	}
	if n > 1 {
		return ctUnsupported
	}
	if !hasParams {
		return ctJSON
	}
	name, value, ok := strings.Cut(trimOWS(params), "=")
	if !ok || !ascii.EqualFold(name, "charset") {
		return ctUnsupported
	}
	if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
		value = value[1 : len(value)-1]
	}
	if !ascii.EqualFold(value, "utf-8") {
		return ctUnsupported
	}
	return ctJSON
}

// trimOWS trims HTTP optional whitespace (spaces and tabs), as strings.Trim(s, " \t") does
// without building a byte set.
func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// trimSpace is strings.TrimSpace, whose call it skips when s neither starts nor ends with a
// byte it could trim: ASCII white space is at most ' ', and Unicode white space begins and
// ends with bytes of 0x80 and above.
func trimSpace(s string) string {
	if s != "" && ' ' < s[0] && s[0] < utf8.RuneSelf && ' ' < s[len(s)-1] && s[len(s)-1] < utf8.RuneSelf {
		return s
	}
	return strings.TrimSpace(s)
}

// corsPreflightHeaders answers a CORS preflight to an MCP server route. Credentials are
// bearer tokens, never cookies, so any origin may call it.
func corsPreflightHeaders(origin string) []Header {
	return []Header{
		{"access-control-allow-origin", origin},
		{"access-control-allow-methods", "GET, POST, DELETE, OPTIONS"},
		{"access-control-allow-headers", "authorization, content-type, mcp-session-id, mcp-protocol-version, last-event-id"},
		{"access-control-max-age", "600"},
		{"vary", "origin"},
	}
}

// corsResponseHeaders are added to responses of MCP server routes to a CORS request.
func corsResponseHeaders(origin string) []Header {
	return []Header{
		{"access-control-allow-origin", origin},
		{"access-control-expose-headers", "mcp-session-id, www-authenticate"},
		{"vary", "origin"},
	}
}
