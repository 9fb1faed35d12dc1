package plugin

import "time"

// Action tells the proxy whether to continue processing a stream or pause it.
type Action uint32

const (
	// Continue lets the proxy move on to the next filter.
	Continue Action = 0
	// Pause stops iteration until the stream is resumed or answered locally.
	Pause Action = 1
)

// LogLevel is a proxy-wasm log level.
type LogLevel uint32

// Log levels, numbered as in the proxy-wasm ABI.
const (
	LogTrace LogLevel = iota
	LogDebug
	LogInfo
	LogWarn
	LogError
	LogCritical
)

// Header is one header field. Pseudo-headers (":path", ":authority", ":method", ":scheme")
// appear as in Envoy, lower-case names throughout.
type Header struct {
	Name, Value string
}

// CallResponse is the answer to a DispatchHTTPCall. Failed is true when the proxy could not
// obtain a response at all (reset, timeout, no route): proxy-wasm reports that as zero headers.
type CallResponse struct {
	Failed  bool
	Headers []Header
	Body    []byte
}

// RootHost is the proxy as seen by the plugin as a whole (the root context).
type RootHost interface {
	// Log writes msg to the proxy's log at level. It must not keep msg after it returns:
	// the caller may reuse msg's bytes (the authorization record's buffer).
	Log(level LogLevel, msg string)
	// LogLevel returns the proxy's current log level: it drops messages below it.
	LogLevel() LogLevel
	// Now returns the proxy's clock.
	Now() time.Time
	// DefineCounter defines (or finds) a counter metric and returns its id.
	DefineCounter(name string) (uint32, error)
	// IncrementCounter adds delta to counter id.
	IncrementCounter(id uint32, delta int64)
	// SharedData reads the value stored under key in the proxy's shared data, shared by
	// every VM of the plugin (every worker thread), with its CAS token; ok is false when
	// there is none or the proxy cannot say.
	SharedData(key string) (value []byte, cas uint32, ok bool)
	// SetSharedData stores value under key if cas is 0 or the current token, and reports
	// whether it was stored.
	SetSharedData(key string, value []byte, cas uint32) bool
}

// StreamHost is the proxy as seen from one HTTP stream. Every method acts on the stream it
// was handed to, including from inside a DispatchHTTPCall callback: the ABI layer sets the
// effective context before invoking it.
type StreamHost interface {
	RootHost

	// RequestHeader returns the first value of the request header name (lower-case).
	RequestHeader(name string) (string, bool)
	// RequestHeaders returns every request header, pseudo-headers included.
	RequestHeaders() []Header
	// SetRequestHeader replaces (or adds) a request header.
	SetRequestHeader(name, value string)
	// RemoveRequestHeader removes every value of a request header.
	RemoveRequestHeader(name string)
	// RequestBody returns the request body buffered so far (size bytes). The bytes are the
	// plugin's: the proxy never writes them again (the plugin parses them without a copy).
	RequestBody(size int) []byte
	// ResponseHeaders returns every response header, ":status" included (response callbacks).
	ResponseHeaders() []Header
	// SetResponseHeader replaces (or adds) a response header.
	SetResponseHeader(name, value string)
	// RemoveResponseHeader removes every value of a response header.
	RemoveResponseHeader(name string)
	// AddResponseHeader adds a value to a response header, keeping the others.
	AddResponseHeader(name, value string)
	// ResponseBody returns the response body buffered so far (size bytes, response-body
	// callbacks).
	ResponseBody(size int) []byte
	// ReplaceResponseBody replaces the first size bytes of the buffered response body with
	// body, and reports whether the proxy took it.
	ReplaceResponseBody(size int, body []byte) bool
	// Property reads a proxy property such as "request.id" or "source.address".
	Property(path ...string) ([]byte, bool)
	// SetProperty publishes value under path for the stream (Envoy: the filter state
	// "wasm.<path>", printable in access logs) and reports whether the proxy took it. The
	// host copies value and never writes it (the filter may pass a string's bytes).
	SetProperty(path string, value []byte) bool
	// SendLocalResponse answers the stream locally; the upstream is never contacted.
	SendLocalResponse(status int, headers []Header, body []byte)
	// ContinueRequest resumes a request stream paused by Pause.
	ContinueRequest()
	// DispatchHTTPCall sends an HTTP request to a proxy cluster. headers must hold
	// ":method", ":path" and ":authority". onResponse runs once, later, in a new callback,
	// unless the stream has ended first.
	DispatchHTTPCall(cluster string, headers []Header, body []byte, timeoutMillis uint32, onResponse func(CallResponse)) error
}

// Stream handles the callbacks of one HTTP stream.
type Stream interface {
	OnRequestHeaders(numHeaders int, endOfStream bool) Action
	OnRequestBody(bodySize int, endOfStream bool) Action
	// OnRequestTrailers is called when trailers end the request (no body callback carried the
	// end of stream). The request must not go on before policy has decided on it.
	OnRequestTrailers(numTrailers int) Action
	OnResponseHeaders(numHeaders int, endOfStream bool) Action
	OnResponseBody(bodySize int, endOfStream bool) Action
	// OnResponseTrailers is called when trailers end the response (no body callback carried
	// the end of stream). A response body the plugin holds must not go on unread.
	OnResponseTrailers(numTrailers int) Action
	// OnDone is called once when the stream ends, however it ends.
	OnDone()
}
