package jsonrpc

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// MethodToolsCall is the method of a tool invocation.
const MethodToolsCall = "tools/call"

// MaxDepth is the deepest nesting of objects and arrays accepted in a body. It is the limit
// of the MCP Go SDK; deeper bodies are refused before they are parsed.
const MaxDepth = 1000

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
	// it is absent or null, or the method is not tools/call.
	Arguments string
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
func Parse(body []byte) (Batch, error) {
	first := -1
	for i, c := range body {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			first = i
			break
		}
	}
	if first < 0 {
		return Batch{}, parseError("empty body")
	}
	if !checkDepth(body, MaxDepth) {
		return Batch{}, parseError("nesting deeper than " + strconv.Itoa(MaxDepth))
	}
	if !gjson.ValidBytes(body) {
		return Batch{}, parseError("invalid JSON")
	}
	switch body[first] {
	case '{':
		s := string(body[first:])
		m, err := parseMessage(gjson.Parse(s), -1)
		if err != nil {
			return Batch{}, err
		}
		return Batch{Messages: []Message{m}}, nil
	case '[':
		root := gjson.Parse(string(body[first:]))
		n := 0
		root.ForEach(func(_, _ gjson.Result) bool { n++; return true })
		if n == 0 {
			return Batch{}, &Error{Err: ErrInvalidRequest, Index: -1, Reason: "empty batch"}
		}
		b := Batch{Array: true, Messages: make([]Message, 0, n)}
		var err error
		root.ForEach(func(_, v gjson.Result) bool {
			var m Message
			m, err = parseMessage(v, len(b.Messages))
			b.Messages = append(b.Messages, m)
			return err == nil
		})
		if err != nil {
			return Batch{}, err
		}
		return b, nil
	}
	return Batch{}, &Error{Err: ErrInvalidRequest, Index: -1, Reason: "body is not an object or an array"}
}

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

// Members of tools/call params, indexes into toolFields.
const (
	fName = iota
	fArguments
	numToolFields
)

var toolFields = [numToolFields]string{"name", "arguments"}

// readMembers iterates over the members of the object v and stores in out those named in
// names. It reports a duplicated name, or a name equal to one of names under Unicode case
// folding but not identical, as a reason; "" means success.
func readMembers(v gjson.Result, names []string, out []gjson.Result, prefix string) string {
	var reason string
	v.ForEach(func(k, val gjson.Result) bool {
		key := k.Str
		for i, name := range names {
			if key == name {
				if out[i].Exists() {
					reason = "duplicate member " + prefix + name
					return false
				}
				out[i] = val
				return true
			}
		}
		for _, name := range names {
			if strings.EqualFold(key, name) {
				reason = "member name differs from " + prefix + name + " only by case"
				return false
			}
		}
		return true
	})
	return reason
}

func isObject(v gjson.Result) bool { return v.Type == gjson.JSON && v.Raw[0] == '{' }
func isArray(v gjson.Result) bool  { return v.Type == gjson.JSON && v.Raw[0] == '[' }

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

func parseMessage(v gjson.Result, index int) (Message, error) {
	invalid := func(id, reason string) error {
		return &Error{Err: ErrInvalidRequest, Index: index, ID: id, Reason: reason}
	}
	if !isObject(v) {
		return Message{}, invalid("", "message is not an object")
	}
	var f [numMessageFields]gjson.Result
	if reason := readMembers(v, messageFields[:], f[:], ""); reason != "" {
		return Message{}, invalid("", reason)
	}
	var m Message
	if id := f[fID]; id.Exists() {
		if id.Type != gjson.String && id.Type != gjson.Number && id.Type != gjson.Null {
			return Message{}, invalid("", "id is not a string, number or null")
		}
		m.ID = id.Raw
	}
	if v := f[fJSONRPC]; v.Type != gjson.String || v.Str != "2.0" {
		return Message{}, invalid(m.ID, `jsonrpc is not "2.0"`)
	}
	hasResult := f[fResult].Exists() || f[fError].Exists()
	method := f[fMethod]
	if !method.Exists() {
		switch {
		case !hasResult:
			return Message{}, invalid(m.ID, "no method, result or error")
		case f[fResult].Exists() && f[fError].Exists():
			return Message{}, invalid(m.ID, "both result and error")
		case m.ID == "":
			return Message{}, invalid("", "response without id")
		case f[fParams].Exists():
			return Message{}, invalid(m.ID, "response with params")
		}
		m.Kind = KindResponse
		return m, nil
	}
	if method.Type != gjson.String {
		return Message{}, invalid(m.ID, "method is not a string")
	}
	if hasResult {
		return Message{}, invalid(m.ID, "method together with result or error")
	}
	if !cleanText(method.Str) {
		return Message{}, invalid(m.ID, "method is not clean text")
	}
	m.Method = method.Str
	m.Kind = KindNotification
	if m.ID != "" {
		m.Kind = KindRequest
	}
	params := f[fParams]
	if params.Exists() && params.Type != gjson.Null && !isObject(params) && !isArray(params) {
		return Message{}, invalid(m.ID, "params is not an object or array")
	}
	if m.Method != MethodToolsCall {
		return m, nil
	}
	if !isObject(params) {
		return Message{}, invalid(m.ID, "tools/call params is not an object")
	}
	var p [numToolFields]gjson.Result
	if reason := readMembers(params, toolFields[:], p[:], "params."); reason != "" {
		return Message{}, invalid(m.ID, reason)
	}
	name := p[fName]
	if name.Type != gjson.String || name.Str == "" {
		return Message{}, invalid(m.ID, "tools/call params.name is not a non-empty string")
	}
	if !cleanText(name.Str) {
		return Message{}, invalid(m.ID, "tools/call params.name is not clean text")
	}
	m.Tool = name.Str
	switch args := p[fArguments]; {
	case isObject(args):
		m.Arguments = args.Raw
	case args.Exists() && args.Type != gjson.Null:
		return Message{}, invalid(m.ID, "tools/call params.arguments is not an object")
	}
	return m, nil
}

// checkDepth reports whether the nesting of objects and arrays in body stays within max.
// It skips string contents; body need not be valid JSON.
func checkDepth(body []byte, max int) bool {
	depth := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '"':
			// Skip to the closing quote: the next one not escaped by an odd number of
			// backslashes. Each run of backslashes is counted once, so this is linear.
			j := i + 1
			for {
				k := bytes.IndexByte(body[j:], '"')
				if k < 0 {
					return true // unterminated string: not JSON, refused by the validator
				}
				j += k
				n := 0
				for p := j - 1; p > i && body[p] == '\\'; p-- {
					n++
				}
				if n%2 == 0 {
					break
				}
				j++
			}
			i = j
		case '{', '[':
			depth++
			if depth > max {
				return false
			}
		case '}', ']':
			if depth == 0 {
				// An unmatched close: not JSON, and the validator stops here before
				// meeting any deeper nesting further on.
				return true
			}
			depth--
		}
	}
	return true
}
