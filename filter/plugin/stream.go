package plugin

import (
	"math"
	"strings"

	"github.com/mcpmesh/gateway/filter/jsonrpc"
	"github.com/mcpmesh/gateway/shared/ascii"
	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/shared/policy"
)

// Credential kinds, part of the cache key.
const (
	credBearer byte = 'b'
	credCookie byte = 'c'
)

// stream is the state machine of one HTTP stream.
//
// Envoy does not deliver the request body to a wasm filter whose request-headers callback
// paused, until the filter continues (unless allow_on_headers_stop_iteration is set), so the
// filter works in two steps that hold in both modes:
//
//  1. headers: route, credential and size checks; the decision bundle (cache or callout,
//     headers paused meanwhile); the upstream request headers are rewritten (assertion,
//     External Token removed or replaced) and released;
//  2. body: buffered up to the route limit, parsed at end of stream, and the policy decides:
//     the body is released, or the stream is answered 403 (the upstream, which may have seen
//     the headers, never receives the body and the request is reset).
//
// Requests without a body are decided in step 1.
type stream struct {
	f     *Filter
	h     StreamHost
	route *route

	credKind   byte
	credential string
	origin     string // Origin of a CORS request to an MCP server route
	isPOST     bool   // an MCP POST: its body is parsed and decided on
	bodyDone   bool   // the whole body was read and parsed
	messages   []jsonrpc.Message
	msgBuf     [1]jsonrpc.Message // storage of messages for a body of one message
	batch      bool               // the body was a JSON-RPC batch
	bundle     *bundle            // set once the credential is verified
	pending    bool               // waiting for the token service
	done       bool               // continued for good or answered: later callbacks pass through
	finished   bool               // OnDone ran
	reqID      string
	reqIDRead  bool
	replied    bool // answered locally
	// unsupportedCT: an application/json body with parameters the upstream may honour
	// (a charset other than UTF-8): refused once the credential is verified.
	unsupportedCT bool
	// upstreamSession is the upstream's own MCP session ID, unwrapped from the client's;
	// upstreamPath the request path with the legacy transport's session unwrapped.
	upstreamSession, upstreamPath string
	// sessionAliases are spellings of Mcp-Session-Id with underscores the request carried.
	sessionAliases []string
	// sseFirstEvent: the response is an event stream whose first event may carry a legacy
	// session to bind (legacysse.go).
	sseFirstEvent bool
	bodySize      int      // the request body buffered so far
	hdrs          []Header // the request headers as they arrived
	idx           hdrIndex // where hdrs holds the headers the filter reads (reqheaders.go)
	respHdrs      []Header // the response headers, during OnResponseHeaders
	// mcpVersion is the MCP protocol revision of the request (its MCP-Protocol-Version, or
	// its _meta's), once the request metadata headers are checked (mcpheaders.go).
	mcpVersion string
	// client is what the message being recorded says of its client and revision.
	client jsonrpc.Client
	// tl is set when the body holds tools/list requests whose responses are filtered
	// (toollist.go); it points at tlWatch.
	tl      *toolListWatch
	tlWatch toolListWatch
}

func (s *stream) OnRequestHeaders(_ int, endOfStream bool) Action {
	if s.f.cfg == nil {
		s.replyError(503, "gateway_unconfigured", "the gateway filter has no configuration")
		return Pause
	}
	s.hdrs = s.h.RequestHeaders()
	s.indexHeaders()
	authority, _ := s.indexed(hAuthority)
	path, _ := s.indexed(hPath)
	s.requestID()
	r, res := s.f.routes.match(authority, path)
	switch res {
	case pluginconf.ForeignHost, pluginconf.GatewayPath:
		s.done = true
		return Continue
	case pluginconf.BadPath:
		s.refuse(metricRejected, policy.ReasonRequestAmbiguous)
		s.replyError(400, "invalid_request", "ambiguous request path")
		return Pause
	case pluginconf.NoRoute:
		s.refuse(metricRejected, policy.ReasonRouteNotFound)
		s.replyError(404, "not_found", "no route for this path")
		return Pause
	}
	s.route = r
	// Nothing a client sends may pass for the gateway's own assertion, nor be read as it by
	// upstreams that map "_" to "-" (CGI, WSGI).
	// Only headers the request carries are removed: a host call costs more in the wasm
	// filter than the scan of the headers it already holds.
	if s.idx.assertionLen {
		s.removeAssertionSpellings()
	}

	if r.Kind == pluginconf.KindServer {
		return s.serverHeaders(endOfStream)
	}
	return s.browserHeaders()
}

// removeAssertionSpellings removes every header that could pass for the gateway's assertion.
func (s *stream) removeAssertionSpellings() {
	for _, h := range s.hdrs {
		if len(h.Name) != len(checkapi.AssertionHeader) {
			continue // both tests below need the length; a call per header costs more
		}
		if ascii.EqualFold(h.Name, checkapi.AssertionHeader) {
			s.h.RemoveRequestHeader(checkapi.AssertionHeader)
		} else if isUnderscoreSpelling(h.Name, checkapi.AssertionHeader) {
			s.h.RemoveRequestHeader(h.Name)
		}
	}
}

// serverHeaders handles the request headers on an mcp.server route.
func (s *stream) serverHeaders(endOfStream bool) Action {
	method, _ := s.indexed(hMethod)
	s.origin, _ = s.indexed(hOrigin)
	if method == "OPTIONS" {
		if _, ok := s.indexed(hACRequestMethod); ok && s.origin != "" {
			s.done = true
			s.h.SendLocalResponse(204, corsPreflightHeaders(s.origin), nil)
			return Pause
		}
	}
	token, ok := s.bearerToken()
	if !ok {
		s.refuse(metricUnauthenticated, policy.ReasonTokenMissing)
		s.replyUnauthorized("", "")
		return Pause
	}
	s.credKind, s.credential = credBearer, token
	if method == "POST" {
		if !s.checkPOSTHeaders(endOfStream) {
			return Pause
		}
		s.isPOST = true
	}
	// GET opens the SSE stream, DELETE ends the session: no body, no tool.
	return s.authorize()
}

// checkPOSTHeaders refuses, before anything is buffered, MCP POSTs whose body the gateway
// could not read the way the upstream will.
func (s *stream) checkPOSTHeaders(endOfStream bool) bool {
	if ce, ok := s.indexed(hContentEncoding); ok && !strings.EqualFold(trimSpace(ce), "identity") {
		s.refuse(metricRejected, policy.ReasonMCPContentTypeUnsupported)
		s.replyError(415, "unsupported_media_type", "encoded request bodies are not accepted")
		return false
	}
	switch s.contentType() {
	case ctNotJSON:
		s.refuse(metricRejected, policy.ReasonMCPContentTypeUnsupported)
		s.replyError(415, "unsupported_media_type", "MCP requests must be application/json")
		return false
	case ctUnsupported:
		// Refused once the user is known, so that the record names who tried it.
		s.unsupportedCT = true
	}
	if cl, ok := s.indexed(hContentLength); ok {
		n, ok := parseContentLength(trimSpace(cl))
		if !ok {
			s.refuse(metricRejected, policy.ReasonBodyUnparsable)
			s.replyError(400, "invalid_request", "invalid Content-Length")
			return false
		}
		if n > s.route.MaxRequestBytes {
			s.refuse(metricRejected, policy.ReasonBodyTooLarge)
			s.replyTooLarge()
			return false
		}
	}
	if endOfStream {
		s.refuse(metricRejected, policy.ReasonBodyUnparsable)
		s.replyJSONRPCError(400, jsonrpc.ParseErrorBody())
		return false
	}
	return true
}

// parseContentLength reads a Content-Length value: ok is false where strconv.ParseInt(s,
// 10, 64) fails or gives a negative number (the call and its error value cost more in the
// wasm filter than the loop).
func parseContentLength(s string) (n int64, ok bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "" {
		return 0, false
	}
	var u uint64
	for i := 0; i < len(s); i++ {
		d := uint64(s[i] - '0')
		if d > 9 || u > (math.MaxInt64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	if neg && u != 0 {
		return 0, false
	}
	return int64(u), true
}

// browserHeaders handles the request headers on an mcp.client or plain route, where the
// credential is the browser session cookie.
func (s *stream) browserHeaders() Action {
	cookie, ok := s.sessionCookie()
	if !ok {
		s.refuse(metricUnauthenticated, policy.ReasonTokenMissing)
		s.replySignIn()
		return Pause
	}
	s.credKind, s.credential = credCookie, cookie
	return s.authorize()
}

func (s *stream) OnRequestBody(bodySize int, endOfStream bool) Action {
	s.bodySize = bodySize
	if s.route != nil && !s.isPOST && s.route.Kind == pluginconf.KindServer && bodySize > 0 {
		// Also after the decision: a body on a GET, DELETE, PUT or "post" is never read.
		if !s.replied {
			s.refuse(metricRejected, policy.ReasonBodyUnparsable)
			s.replyError(400, "invalid_request", "only POST requests to an MCP server carry a body")
		}
		return Pause
	}
	if s.done {
		return Continue
	}
	if s.route == nil {
		return Continue
	}
	if !s.isPOST {
		if s.pending {
			return Pause
		}
		return Continue
	}
	if int64(bodySize) > s.route.MaxRequestBytes {
		s.refuse(metricRejected, policy.ReasonBodyTooLarge)
		s.replyTooLarge()
		return Pause
	}
	if !endOfStream || s.unsupportedCT {
		return Pause // an unsupported Content-Type is refused in onBundle, body unread
	}
	batch, err := jsonrpc.ParseOwned(s.msgBuf[:], s.h.RequestBody(bodySize))
	if err != nil {
		s.refuse(metricRejected, policy.ReasonBodyUnparsable)
		var id string
		code := jsonrpc.CodeParseError
		if e, ok := err.(*jsonrpc.Error); ok {
			id, code = e.ID, e.Code()
		}
		msg := jsonrpc.MessageParseError
		if code != jsonrpc.CodeParseError {
			msg = jsonrpc.MessageInvalidRequest
		}
		s.replyJSONRPCError(400, jsonrpc.AppendErrorResponse(nil, id, code, msg, s.requestID()))
		return Pause
	}
	s.messages, s.batch, s.bodyDone = batch.Messages, batch.Array, true
	if s.bundle == nil {
		return Pause // the check is still out; onBundle decides
	}
	if s.decide() {
		s.done = true
		return Continue
	}
	return Pause
}

// OnRequestTrailers ends the request: trailers carry neither an unread body nor headers
// whose check is still out past the filter.
func (s *stream) OnRequestTrailers(int) Action {
	if s.done || s.route == nil {
		return Continue
	}
	if s.isPOST && !s.bodyDone {
		return s.OnRequestBody(s.bodySize, true)
	}
	if s.pending || s.bundle == nil {
		return Pause
	}
	return Continue
}

func (s *stream) OnResponseHeaders(_ int, endOfStream bool) Action {
	if s.route == nil {
		return Continue
	}
	if !s.replied {
		// One read of the response headers serves every check below (none of them reads
		// a header that the others change).
		s.respHdrs = s.h.ResponseHeaders()
		s.sanitizeUpstreamResponse(endOfStream)
		if s.tl != nil {
			s.toolListHeaders(endOfStream)
		} else if s.sseFirstEvent {
			s.watchEventStreamLists()
		} else if s.asksForEventStream() {
			// Any other answer to the event-stream GET (another 2xx, compressed, another
			// media type): clients take it as the stream, so it is read or refused too.
			s.watchEventStreamLists()
			if s.tl != nil {
				s.toolListHeaders(endOfStream)
			}
		}
		s.respHdrs = nil
	}
	if s.route.Kind == pluginconf.KindServer && s.origin != "" {
		for _, h := range corsResponseHeaders(s.origin) {
			s.h.SetResponseHeader(h.Name, h.Value)
		}
	}
	return Continue
}

// sanitizeUpstreamResponse keeps an upstream from speaking for the gateway: it cannot set the
// gateway's own cookies (session fixation on the route host), and an MCP server cannot send
// clients to an authorization server of its choosing — its WWW-Authenticate is dropped, and a
// 401 carries the gateway's own challenge instead. The MCP session ID it hands out reaches the
// client bound to the user and route (session.go).
func (s *stream) sanitizeUpstreamResponse(endOfStream bool) {
	var status, session, authn string
	var cookies []string
	gatewayCookie, hasSession := false, false
	hasAuthenticate := false
	for _, h := range s.respHdrs {
		switch h.Name {
		case ":status":
			status = h.Value
		case sessionHeader:
			if !hasSession {
				session, hasSession = h.Value, true
			}
		case "www-authenticate":
			hasAuthenticate = true
			if authn == "" {
				authn = h.Value
			}
		case "set-cookie":
			name, _, _ := strings.Cut(trimSpace(h.Value), "=")
			if isGatewayCookie(name) {
				gatewayCookie = true
			} else {
				cookies = append(cookies, h.Value)
			}
		default:
			// Envoy hands header names lower-case; any other spelling is removed all the same.
			hasAuthenticate = hasAuthenticate || len(h.Name) == len("www-authenticate") && ascii.EqualFold(h.Name, "www-authenticate")
		}
	}
	if gatewayCookie {
		s.h.RemoveResponseHeader("set-cookie")
		for _, c := range cookies {
			s.h.AddResponseHeader("set-cookie", c)
		}
	}
	if s.route.Kind == pluginconf.KindServer {
		if hasSession {
			s.bindSession(session)
		}
		if !endOfStream && s.watchesEventStream(status) {
			s.sseFirstEvent = true
			s.h.RemoveResponseHeader("content-length") // the first event may change length
		}
		if hasAuthenticate {
			s.h.RemoveResponseHeader("www-authenticate")
		}
		switch {
		case status == "401":
			s.h.SetResponseHeader("www-authenticate", `Bearer error="invalid_token", `+s.route.challenge)
		case status == "403" && s.route.UpstreamOAuth2 && authn != "":
			if v, ok := stepUpChallenge(authn, s.route.resourceMetadata); ok {
				s.h.SetResponseHeader("www-authenticate", v)
			}
		}
	}
}

func (s *stream) OnResponseBody(bodySize int, endOfStream bool) Action {
	if s.tl != nil && s.tl.mode != tlNone && !s.replied {
		return s.toolListBody(bodySize, endOfStream)
	}
	if !s.sseFirstEvent {
		return Continue
	}
	return s.bindEndpointEvent(bodySize, endOfStream)
}

func (s *stream) OnDone() {
	// A stream that ends with its check call unanswered (the client went away) gives the
	// call's slot back: the proxy drops the answer of an ended stream's call.
	s.endCheckCall()
	s.finished = true
	s.credential = ""
}

// authorize obtains the decision bundle, from the cache or by a callout, and goes on with it.
func (s *stream) authorize() Action {
	now := s.h.Now()
	key := s.f.cache.key(s.credKind, s.credential, s.route.ID)
	if b := s.f.cache.get(key, now); b != nil {
		s.f.metrics.inc(metricCacheHit)
		if b.refused {
			return s.refusedFromCache()
		}
		return s.onBundle(b, false)
	}
	s.f.metrics.inc(metricCacheMiss)
	if s.f.inflight >= maxInflightChecks {
		return s.checksExhausted()
	}
	if err := s.callTokenService(key); err != nil {
		s.refuse(metricUnavailable, policy.ReasonTokenServiceUnavailable)
		s.h.Log(LogError, "mcp-gateway: check call not dispatched: "+err.Error())
		s.replyError(503, "temporarily_unavailable", "the gateway cannot verify credentials right now")
		return Pause
	}
	s.pending = true
	s.f.inflight++
	return Pause
}

// onBundle goes on once the credential is verified: it rewrites the upstream headers, then
// decides now (no body to wait for, or the body already read) or releases the headers and
// waits for the body. resumed says whether the stream is paused and must be continued by a
// host call rather than by the returned action.
func (s *stream) onBundle(b *bundle, resumed bool) Action {
	s.bundle = b
	if s.route.Kind == pluginconf.KindServer && !s.admitToServer(b) {
		return Pause
	}
	if !s.rewriteHeaders(b) {
		return Pause
	}
	if s.isPOST && !s.bodyDone {
		// Release the headers; the body comes through OnRequestBody.
		if resumed {
			s.h.ContinueRequest()
		}
		return Continue
	}
	if !s.decide() {
		return Pause
	}
	s.done = true
	if resumed {
		s.h.ContinueRequest()
	}
	return Continue
}
