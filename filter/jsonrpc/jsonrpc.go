package jsonrpc

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
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
	// it is absent or null, or the method is not tools/call. It is exactly one valid JSON
	// object (Parse validated the whole body), as written in the body.
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
	switch validate(body, MaxDepth) {
	case tooDeep:
		return Batch{}, parseError("nesting deeper than " + strconv.Itoa(MaxDepth))
	case invalidJSON:
		return Batch{}, parseError("invalid JSON")
	}
	// The body is valid JSON from here on; its text is copied once and every string of
	// the result shares that copy.
	text := string(body[first:])
	switch text[0] {
	case '{':
		m, err := parseMessage(text, -1)
		if err != nil {
			return Batch{}, err
		}
		return Batch{Messages: []Message{m}}, nil
	case '[':
		n := 0
		for e := newElements(text); e.next() != ""; {
			n++
		}
		if n == 0 {
			return Batch{}, &Error{Err: ErrInvalidRequest, Index: -1, Reason: "empty batch"}
		}
		b := Batch{Array: true, Messages: make([]Message, 0, n)}
		for e := newElements(text); ; {
			v := e.next()
			if v == "" {
				return b, nil
			}
			m, err := parseMessage(v, len(b.Messages))
			if err != nil {
				return Batch{}, err
			}
			b.Messages = append(b.Messages, m)
		}
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

// readMembers reads the members of the object obj (raw JSON) and stores in out the raw
// values of those named in names. It reports a duplicated name, or a name equal to one of
// names under Unicode case folding but not identical, as a reason; "" means success.
func readMembers(obj string, names []string, out []string, prefix string) string {
	for m := newMembers(obj); ; {
		rawKey, val := m.next()
		if rawKey == "" {
			return ""
		}
		key := decodeString(rawKey)
		found := false
		for i, name := range names {
			if key == name {
				if out[i] != "" {
					return "duplicate member " + prefix + name
				}
				out[i], found = val, true
				break
			}
		}
		if found {
			continue
		}
		for _, name := range names {
			if strings.EqualFold(key, name) {
				return "member name differs from " + prefix + name + " only by case"
			}
		}
	}
}

// Kinds of raw JSON values, told by their first byte; "" is a missing value.
func isObject(v string) bool { return v != "" && v[0] == '{' }
func isArray(v string) bool  { return v != "" && v[0] == '[' }
func isString(v string) bool { return v != "" && v[0] == '"' }
func isNull(v string) bool   { return v == "null" }
func isNumber(v string) bool { return v != "" && (v[0] == '-' || isDigit(v[0])) }

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

func parseMessage(v string, index int) (Message, error) {
	invalid := func(id, reason string) error {
		return &Error{Err: ErrInvalidRequest, Index: index, ID: id, Reason: reason}
	}
	if !isObject(v) {
		return Message{}, invalid("", "message is not an object")
	}
	var f [numMessageFields]string
	if reason := readMembers(v, messageFields[:], f[:], ""); reason != "" {
		return Message{}, invalid("", reason)
	}
	var m Message
	if id := f[fID]; id != "" {
		if !isString(id) && !isNumber(id) && !isNull(id) {
			return Message{}, invalid("", "id is not a string, number or null")
		}
		m.ID = id
	}
	if v := f[fJSONRPC]; !isString(v) || decodeString(v) != "2.0" {
		return Message{}, invalid(m.ID, `jsonrpc is not "2.0"`)
	}
	hasResult := f[fResult] != "" || f[fError] != ""
	method := f[fMethod]
	if method == "" {
		switch {
		case !hasResult:
			return Message{}, invalid(m.ID, "no method, result or error")
		case f[fResult] != "" && f[fError] != "":
			return Message{}, invalid(m.ID, "both result and error")
		case m.ID == "":
			return Message{}, invalid("", "response without id")
		case f[fParams] != "":
			return Message{}, invalid(m.ID, "response with params")
		}
		m.Kind = KindResponse
		return m, nil
	}
	if !isString(method) {
		return Message{}, invalid(m.ID, "method is not a string")
	}
	if hasResult {
		return Message{}, invalid(m.ID, "method together with result or error")
	}
	m.Method = decodeString(method)
	if !cleanText(m.Method) {
		return Message{}, invalid(m.ID, "method is not clean text")
	}
	m.Kind = KindNotification
	if m.ID != "" {
		m.Kind = KindRequest
	}
	params := f[fParams]
	if params != "" && !isNull(params) && !isObject(params) && !isArray(params) {
		return Message{}, invalid(m.ID, "params is not an object or array")
	}
	if m.Method != MethodToolsCall {
		return m, nil
	}
	if !isObject(params) {
		return Message{}, invalid(m.ID, "tools/call params is not an object")
	}
	var p [numToolFields]string
	if reason := readMembers(params, toolFields[:], p[:], "params."); reason != "" {
		return Message{}, invalid(m.ID, reason)
	}
	if name := p[fName]; isString(name) {
		m.Tool = decodeString(name)
	}
	if m.Tool == "" {
		return Message{}, invalid(m.ID, "tools/call params.name is not a non-empty string")
	}
	if !cleanText(m.Tool) {
		return Message{}, invalid(m.ID, "tools/call params.name is not clean text")
	}
	switch args := p[fArguments]; {
	case isObject(args):
		m.Arguments = args
	case args != "" && !isNull(args):
		return Message{}, invalid(m.ID, "tools/call params.arguments is not an object")
	}
	return m, nil
}
