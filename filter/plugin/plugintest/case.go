package plugintest

import (
	"net/url"
	"regexp"
	"strings"
	"unicode/utf16"
)

// Request is a request as the proxy hands it to the filter.
type Request struct {
	Method    string
	Authority string
	Path      string
	Headers   [][2]string
	// Chunks is the request body as it arrives; none means a bodiless request.
	Chunks []string
	// NoContentLength leaves out Content-Length (a chunked upload).
	NoContentLength bool
}

// Case is one request, what leads up to it and what must come of it. Every case runs under
// Config on a filter of its own, in each Mode, natively and against filter.wasm.
type Case struct {
	// Name says the behaviour that holds.
	Name string
	// RedTeam marks an attack: a request sent to get past policy, leak a credential, confuse
	// routing or make the filter fail open. Attacks run under TestRedTeam_Native and
	// TestRedTeam_Wasm, the other cases under TestScenarios_Native and TestScenarios_Wasm.
	RedTeam bool
	// Before are requests sent first on the same filter (to fill the decision cache or open
	// an MCP session). Their check calls are answered by AnswerCheck, and the upstream
	// answers each of them with BeforeResponse if set. The Mcp-Session-Id the client
	// received last in those answers replaces SessionPlaceholder in Request's header values.
	Before             []Request
	BeforeResponse     [][2]string
	BeforeResponseBody []string
	// Request is the request under test.
	Request Request
	// Trailers, when set, end the request with trailers: no body chunk carries the end of
	// stream (an HTTP/2 client, or HTTP/1 chunked with trailers enabled in Envoy).
	Trailers [][2]string
	// Answer, when set, answers Request's check calls instead of AnswerCheck.
	Answer func(key string, body []byte) CheckAnswer
	// Response, when set, is the upstream's answer (":status" and headers) to Request if it
	// was forwarded, and ResponseBody the chunks of its body.
	Response     [][2]string
	ResponseBody []string
	// ResponseTrailers, when set, end the response with trailers: no body chunk carries the
	// end of stream.
	ResponseTrailers [][2]string
	// ClientResponse and ClientBody, when set, report what is wrong with the response headers
	// and the response body the client receives for Response ("" when nothing is).
	ClientResponse func(Headers) string
	ClientBody     func(string) string
	// Want is what the client, the upstream and the log must see of Request.
	Want Want
}

// Want is what the client, the upstream and the log must see.
type Want struct {
	// Status is the status of a local reply; 0 means the request goes upstream.
	Status int
	// BodyContains are substrings of the local reply body.
	BodyContains []string
	// ReplyHeaders are headers of the local reply (lower-case names).
	ReplyHeaders map[string]string
	// Upstream are the headers the upstream receives; an empty value means absent.
	Upstream map[string]string
	// UpstreamCount is how many values of a header the upstream must receive.
	UpstreamCount map[string]int
	// LogContains are substrings that the authorization log must contain.
	LogContains []string
	// LogNotContains must not appear in any log line.
	LogNotContains []string
	// CheckCalls is the number of check calls made (-1: don't care, for requests refused
	// for their body while the check may or may not have gone out, depending on the mode).
	CheckCalls int
	// CheckHeaders are headers the check call must carry; an empty value means absent.
	CheckHeaders map[string]string
	// Counters are counters the request must increment.
	Counters []string
	// CountersUnchanged are counters the request must not change.
	CountersUnchanged []string
	// Properties are properties the filter must have set on the stream
	// (proxy_set_property: Envoy's filter state "wasm.<name>"), with their values.
	Properties map[string]string
	// Golden names a file under plugintest's testdata/golden that the local reply (status,
	// Content-Type and body) must equal byte for byte, natively and in wasm alike; rewrite
	// it with go test -update.
	Golden string
	// ClientBodyGolden names a file under plugintest's testdata/golden that the response body
	// the client receives must equal byte for byte, natively and in wasm alike.
	ClientBodyGolden string
}

// Result is what a runner observed of a case's Request.
type Result struct {
	// Forwarded is true when the request went on to the upstream.
	Forwarded bool
	// Status, ReplyHeaders and Body describe a local reply.
	Status       int
	ReplyHeaders map[string]string
	Body         string
	// Upstream are the request headers as forwarded (the last value of each), UpstreamAll
	// every value of each.
	Upstream    map[string]string
	UpstreamAll Headers
	// ClientResponse are the response headers the client received for the case's Response
	// (nil when none was sent), ClientBody the response body it received.
	ClientResponse Headers
	ClientBody     string
	// Logs are the lines the filter logged.
	Logs []string
	// CheckCalls counts the check calls.
	CheckCalls int
	// LateHeaderWrites counts request-header changes attempted after the headers went on
	// (Envoy ignores them: a bug).
	LateHeaderWrites int
	// Stuck means the stream could make no progress (a paused stream never continued).
	Stuck bool
	// CheckHeaders are the headers of the request's last check call (lower-case names).
	CheckHeaders Headers
	// Counters are how much each counter the request changed went up.
	Counters map[string]int64
	// Properties are the properties the filter set on the stream.
	Properties map[string]string
}

// Headers are header fields in order, lower-case names, every value of each.
type Headers [][2]string

// Get returns the first value of name.
func (h Headers) Get(name string) (string, bool) {
	for _, f := range h {
		if f[0] == name {
			return f[1], true
		}
	}
	return "", false
}

// Values returns every value of name.
func (h Headers) Values(name string) []string {
	var vs []string
	for _, f := range h {
		if f[0] == name {
			vs = append(vs, f[1])
		}
	}
	return vs
}

// SessionPlaceholder in a header value or the path of a Case's Request stands for the MCP
// session ID the client received in an answer to a Before request (ClientSession).
const SessionPlaceholder = "$SESSION"

// WithSession returns req with SessionPlaceholder replaced by session in its header values
// and, query-escaped, in its path.
func WithSession(req Request, session string) Request {
	hs := make([][2]string, len(req.Headers))
	for i, h := range req.Headers {
		hs[i] = [2]string{h[0], strings.ReplaceAll(h[1], SessionPlaceholder, session)}
	}
	req.Headers = hs
	req.Path = strings.ReplaceAll(req.Path, SessionPlaceholder, url.QueryEscape(session))
	return req
}

// legacySessionParam finds the session of a legacy endpoint event in a response body.
var legacySessionParam = regexp.MustCompile(`[?&](?:sessionId|session_id|sessionid)=([^&\s#]+)`)

// ClientSession returns the session a client received in r: its Mcp-Session-Id, or the
// session in the URL of a legacy transport's endpoint event.
func ClientSession(r Result) (string, bool) {
	if id, ok := r.ClientResponse.Get("mcp-session-id"); ok {
		return id, true
	}
	if m := legacySessionParam.FindStringSubmatch(r.ClientBody); m != nil {
		id, err := url.QueryUnescape(m[1])
		return id, err == nil
	}
	return "", false
}

// Request builders of the cases.

func bearer(tok string) [2]string { return [2]string{"authorization", "Bearer " + tok} }

var jsonCT = [2]string{"content-type", "application/json"}

func post(authority, path string, body string, headers ...[2]string) Request {
	return Request{Method: "POST", Authority: authority, Path: path, Headers: append([][2]string{jsonCT}, headers...), Chunks: []string{body}}
}

func get(authority, path string, headers ...[2]string) Request {
	return Request{Method: "GET", Authority: authority, Path: path, Headers: headers}
}

func toolsCall(id, tool string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"text":"hi"}}}`
}

const toolsList = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

// deniedCall is a tools/call of a tool the recommended policy denies.
var deniedCall = toolsCall("1", "delete_everything")

func utf16LE(s string) string {
	var b strings.Builder
	b.WriteString("\xff\xfe")
	for _, u := range utf16.Encode([]rune(s)) {
		b.WriteByte(byte(u))
		b.WriteByte(byte(u >> 8))
	}
	return b.String()
}
