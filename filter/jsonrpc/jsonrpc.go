package jsonrpc

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpmesh/gateway/shared/jsontext"
)

// MethodToolsCall is the method of a tool invocation.
const MethodToolsCall = "tools/call"

// MaxDepth is the deepest nesting of objects and arrays accepted in a body. It is the limit
// of the MCP Go SDK; deeper bodies are refused before they are parsed.
const MaxDepth = jsontext.MaxDepth

// Kind is the kind of a JSON-RPC message.
type Kind uint8

// The kinds of JSON-RPC messages.
const (
	// KindRequest is a message with a method and an id: it expects a response.
	KindRequest Kind = iota + 1
	// KindNotification is a message with a method and no id.
	KindNotification
	// KindResponse is a message with an id and a result or an error, and no method.
	KindResponse
)

// String returns "request", "notification" or "response".
func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	}
	return "unknown"
}

// Message is what the gateway reads of one JSON-RPC message. Its strings share memory with
// one copy of the body made by [Parse].
type Message struct {
	// Kind is the kind of the message.
	Kind Kind
	// Method is the decoded method of a request or notification; "" for a response.
	Method string
	// ID is the raw JSON text of the id (a string literal with its quotes, a number or
	// null), to echo back in a response; "" when the message has no id.
	ID string
	// Tool is the decoded params.name of a tools/call message; "" otherwise.
	Tool string
	// Arguments is the raw JSON object params.arguments of a tools/call message; "" when
	// it is absent or null, or the method is not tools/call. It is exactly one valid JSON
	// object (Parse validated the whole body), as written in the body.
	Arguments string
	// Name is the value the Mcp-Name request header mirrors: the decoded params.name of a
	// tools/call or prompts/get message, or params.uri of a resources/read message; ""
	// otherwise, or when that member is not a string.
	Name string
	// Meta is the raw JSON object params._meta (where MCP 2026-07-28 carries the protocol
	// version and the client's name); "" when it is absent or not an object.
	Meta string
	// Params is the raw params value as written in the body; "" when absent.
	Params string
}

// Batch is the parsed body of a request.
type Batch struct {
	// Array is true when the body was a JSON array (a JSON-RPC batch), even of one element.
	Array bool
	// Messages holds the messages in body order; it is never empty.
	Messages []Message
}

// Errors wrapped by an [*Error], for callers that choose the JSON-RPC error code.
var (
	// ErrParse reports a body that is not JSON (JSON-RPC code -32700).
	ErrParse = errors.New("parse error")
	// ErrInvalidRequest reports JSON that is not an acceptable JSON-RPC body (-32600).
	ErrInvalidRequest = errors.New("invalid request")
)

// Error is the error returned by [Parse]. It never quotes the body.
type Error struct {
	// Err is ErrParse or ErrInvalidRequest.
	Err error
	// Index is the position of the offending message in a batch, or -1.
	Index int
	// ID is the raw id of the offending message when it could be read unambiguously, for
	// the error response; "" otherwise.
	ID string
	// Reason says what is wrong, naming the member concerned.
	Reason string
}

func (e *Error) Error() string {
	s := "jsonrpc: " + e.Err.Error()
	if e.Index >= 0 {
		s += ": message " + strconv.Itoa(e.Index)
	}
	return s + ": " + e.Reason
}

// Unwrap returns ErrParse or ErrInvalidRequest.
func (e *Error) Unwrap() error { return e.Err }

// Code returns the JSON-RPC error code for the error: CodeParseError or CodeInvalidRequest.
func (e *Error) Code() int {
	if e.Err == ErrParse {
		return CodeParseError
	}
	return CodeInvalidRequest
}

func parseError(reason string) error {
	return &Error{Err: ErrParse, Index: -1, Reason: reason}
}

// Parse reads an MCP request body. The error, when not nil, is an [*Error]. The body is
// copied once; it may be reused after Parse returns.
func Parse(body []byte) (Batch, error) { return parse(nil, body, false) }

// ParseOwned is Parse for a body that nobody writes to again, such as the buffer the proxy
// hands the filter: the strings of the result share the body's memory instead of a copy. The
// messages are appended to dst[:0], so that a caller's storage for one message spares an
// allocation. In the wasm filter each allocation costs more than parsing a hundred bytes.
func ParseOwned(dst []Message, body []byte) (Batch, error) { return parse(dst[:0], body, true) }

// Members of a message, indexes into messageFields.
const (
	fJSONRPC = iota
	fMethod
	fParams
	fID
	fResult
	fError
	numMessageFields
)

var messageFields = [numMessageFields]string{"jsonrpc", "method", "params", "id", "result", "error"}

// Members of params that the gateway reads, indexes into toolFields: the tool (or prompt)
// name and arguments, the resource URI, and _meta.
const (
	fName = iota
	fArguments
	fURI
	fMeta
	numToolFields
)

var toolFields = [numToolFields]string{"name", "arguments", "uri", "_meta"}

// Methods whose params member the Mcp-Name header mirrors.
const (
	MethodResourcesRead = "resources/read"
	MethodPromptsGet    = "prompts/get"
)

// readMembers reads the members of the object that starts s (valid JSON, which may go on
// after the object) and stores in out the raw values of those named in names. It returns the
// length of the object's text, or a reason: a duplicated name, or a name equal to one of
// names under Unicode case folding but not identical. The names must be ASCII.
//
// nested, when not nil, names a member whose value, if an object, is read in the same pass
// (its own problem, if any, goes to nested.reason): tools/call params, so that the arguments
// in them are scanned once rather than once per level.
func readMembers(s string, names []string, out []string, prefix string, nested *nestedMembers, l *longStrings) (int, string) {
	m := newMembers(s)
	for {
		rawKey := m.key()
		if rawKey == "" {
			return m.end, ""
		}
		key := decodeString(rawKey)
		i := memberIndex(names, key)
		if i < 0 {
			if reason := caseVariant(names, key, prefix); reason != "" {
				return 0, reason
			}
			m.valueIn(l)
			continue
		}
		if out[i] != "" {
			return 0, "duplicate member " + prefix + names[i]
		}
		if nested == nil || i != nested.index || !isObject(m.rest()) {
			out[i] = m.valueIn(l)
			continue
		}
		n, reason := readMembers(m.rest(), nested.names, nested.out[:], nested.prefix, nil, l)
		if reason != "" {
			nested.reason = reason
			n = skipValue(m.rest(), 0, l)
		}
		out[i] = m.rest()[:n]
		m.skip(n)
	}
}

// memberIndex returns the index of key in names, or -1.
func memberIndex(names []string, key string) int {
	for i, name := range names {
		// The first byte tells apart the names of one length in the gateway's lists, so
		// that at most one comparison of the whole key (a call in wasm) is made.
		if len(name) == len(key) && name[0] == key[0] && name == key {
			return i
		}
	}
	return -1
}

// caseVariant returns the problem of a key that equals one of names under Unicode case
// folding but is not identical, or "". The names are ASCII, so an ASCII key can fold to one
// only at the same length: strings.EqualFold runs only for those and for keys with other
// characters (ſ and the Kelvin sign fold to s and k).
func caseVariant(names []string, key, prefix string) string {
	ascii := true
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	for _, name := range names {
		if (!ascii || len(name) == len(key)) && strings.EqualFold(key, name) {
			return "member name differs from " + prefix + name + " only by case"
		}
	}
	return ""
}

// nestedMembers is the member readMembers reads inside one of the members it reads: the
// members of tools/call params.
type nestedMembers struct {
	index  int // the member, an index into the outer names
	names  []string
	out    [numToolFields]string
	prefix string
	reason string
}

// Kinds of raw JSON values, told by their first byte; "" is a missing value.
func isObject(v string) bool { return v != "" && v[0] == '{' }
func isArray(v string) bool  { return v != "" && v[0] == '[' }
func isString(v string) bool { return v != "" && v[0] == '"' }
func isNull(v string) bool   { return v == "null" }
func isNumber(v string) bool { return v != "" && (v[0] == '-' || isDigit(v[0])) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// cleanText reports whether s is valid UTF-8 without U+FFFD, the character decoders
// substitute for broken text, and without control characters.
func cleanText(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
