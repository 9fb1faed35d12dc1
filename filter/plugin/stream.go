package plugin

import (
	"strconv"
	"strings"

	"github.com/mcpmesh/gateway/filter/jsonrpc"
	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/pluginconf"
)

// Credential kinds, part of the cache key.
const (
	credBearer byte = 'b'
	credCookie byte = 'c'
)

// stream is the state machine of one HTTP stream:
//
//	headers → (body, buffered up to the route limit) → bundle (cache or callout) → policy
//	→ rewrite headers and continue, or answer locally.
type stream struct {
	f     *Filter
	h     StreamHost
	route *route

	credKind   byte
	credential string
	origin     string // Origin of a CORS request to an MCP server route
	hasBody    bool   // a POST body is being buffered
	messages   []jsonrpc.Message
	batch      bool // the body was a JSON-RPC batch
	pending    bool // waiting for the token service
	done       bool // continued or answered: later callbacks pass through
	finished   bool // OnDone ran
}

func (s *stream) OnRequestHeaders(_ int, endOfStream bool) Action {
	if s.f.cfg == nil {
		s.replyError(503, "gateway_unconfigured", "the gateway filter has no configuration")
		return Pause
	}
	authority, _ := s.h.RequestHeader(":authority")
	path, _ := s.h.RequestHeader(":path")
	r, res := s.f.routes.match(authority, path)
	switch res {
	case foreignHost, gatewayPath:
		s.done = true
		return Continue
	case badPath:
		s.f.metrics.inc(metricRejected)
		s.replyError(400, "invalid_request", "ambiguous request path")
		return Pause
	case noRoute:
		s.f.metrics.inc(metricRejected)
		s.replyError(404, "not_found", "no route for this path")
		return Pause
	}
	s.route = r
	// Nothing a client sends may pass for the gateway's own assertion.
	s.h.RemoveRequestHeader(checkapi.AssertionHeader)

	if r.Kind == pluginconf.KindServer {
		return s.serverHeaders(endOfStream)
	}
	return s.browserHeaders()
}

// serverHeaders handles the request headers on an mcp.server route.
func (s *stream) serverHeaders(endOfStream bool) Action {
	method, _ := s.h.RequestHeader(":method")
	s.origin, _ = s.h.RequestHeader("origin")
	if method == "OPTIONS" {
		if _, ok := s.h.RequestHeader("access-control-request-method"); ok && s.origin != "" {
			s.done = true
			s.h.SendLocalResponse(204, corsPreflightHeaders(s.origin), nil)
			return Pause
		}
	}
	token, ok := bearerToken(s.h)
	if !ok {
		s.f.metrics.inc(metricUnauthenticated)
		s.replyUnauthorized("", "")
		return Pause
	}
	s.credKind, s.credential = credBearer, token
	if method != "POST" {
		// GET opens the SSE stream, DELETE ends the session: no body, no tool.
		return s.authorize()
	}
	if ce, ok := s.h.RequestHeader("content-encoding"); ok && !strings.EqualFold(strings.TrimSpace(ce), "identity") {
		s.f.metrics.inc(metricRejected)
		s.replyError(415, "unsupported_media_type", "encoded request bodies are not accepted")
		return Pause
	}
	if ct, _ := s.h.RequestHeader("content-type"); !isJSONMediaType(ct) {
		s.f.metrics.inc(metricRejected)
		s.replyError(415, "unsupported_media_type", "MCP requests must be application/json")
		return Pause
	}
	if cl, ok := s.h.RequestHeader("content-length"); ok {
		n, err := strconv.ParseInt(strings.TrimSpace(cl), 10, 64)
		if err != nil || n < 0 {
			s.replyError(400, "invalid_request", "invalid Content-Length")
			return Pause
		}
		if n > s.route.MaxRequestBytes {
			s.f.metrics.inc(metricRejected)
			s.replyTooLarge()
			return Pause
		}
	}
	if endOfStream {
		s.replyJSONRPCError(400, jsonrpc.ParseErrorBody())
		return Pause
	}
	s.hasBody = true
	return Pause
}

// browserHeaders handles the request headers on an mcp.client or plain route, where the
// credential is the browser session cookie.
func (s *stream) browserHeaders() Action {
	cookie, ok := sessionCookie(s.h)
	if !ok {
		s.f.metrics.inc(metricUnauthenticated)
		s.replySignIn()
		return Pause
	}
	s.credKind, s.credential = credCookie, cookie
	return s.authorize()
}

func (s *stream) OnRequestBody(bodySize int, endOfStream bool) Action {
	if s.done {
		return Continue
	}
	if !s.hasBody {
		// A body on a browser route or after a bodiless method: hold it while the
		// decision is pending; the proxy buffers it.
		return Pause
	}
	if int64(bodySize) > s.route.MaxRequestBytes {
		s.f.metrics.inc(metricRejected)
		s.replyTooLarge()
		return Pause
	}
	if !endOfStream {
		return Pause
	}
	s.hasBody = false
	batch, err := jsonrpc.Parse(s.h.RequestBody(bodySize))
	if err != nil {
		s.f.metrics.inc(metricRejected)
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
	s.messages = batch.Messages
	if batch.Array {
		s.batch = true
	}
	return s.authorize()
}

func (s *stream) OnResponseHeaders(int, bool) Action {
	if s.route != nil && s.route.Kind == pluginconf.KindServer && s.origin != "" {
		for _, h := range corsResponseHeaders(s.origin) {
			s.h.SetResponseHeader(h.Name, h.Value)
		}
	}
	return Continue
}

func (s *stream) OnResponseBody(int, bool) Action { return Continue }

func (s *stream) OnDone() {
	s.finished = true
	s.credential = ""
}

// authorize obtains the decision bundle (cache, else callout) and applies it. It returns
// Continue when the request may go on now, Pause otherwise.
func (s *stream) authorize() Action {
	now := s.h.Now()
	key := makeCacheKey(s.credKind, s.credential, s.route.ID)
	if b := s.f.cache.get(key, now); b != nil {
		s.f.metrics.inc(metricCacheHit)
		if s.apply(b) {
			s.done = true
			return Continue
		}
		return Pause
	}
	s.f.metrics.inc(metricCacheMiss)
	if err := s.callTokenService(key); err != nil {
		s.f.metrics.inc(metricUnavailable)
		s.h.Log(LogError, "mcp-gateway: check call not dispatched: "+err.Error())
		s.replyError(503, "temporarily_unavailable", "the gateway cannot verify credentials right now")
		return Pause
	}
	s.pending = true
	return Pause
}

// resume is called with the bundle obtained by a callout.
func (s *stream) resume(b *bundle) {
	if s.apply(b) {
		s.done = true
		s.h.ContinueRequest()
	}
}
