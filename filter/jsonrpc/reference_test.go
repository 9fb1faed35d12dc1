package jsonrpc

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

func refParseError(reason string) error {
	return &Error{Err: ErrParse, Index: -1, Reason: reason}
}

// refParse is Parse as it was before the hand-written scanner, on gjson: the reference
// FuzzParse_MatchesGJSONReading compares Parse with.
//
// Parse reads an MCP request body. The error, when not nil, is an [*Error]. The body is
// copied once; it may be reused after Parse returns.
func refParse(body []byte) (Batch, error) {
	first := -1
	for i, c := range body {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			first = i
			break
		}
	}
	if first < 0 {
		return Batch{}, refParseError("empty body")
	}
	if !refCheckDepth(body, MaxDepth) {
		return Batch{}, refParseError("nesting deeper than " + strconv.Itoa(MaxDepth))
	}
	if !gjson.ValidBytes(body) {
		return Batch{}, refParseError("invalid JSON")
	}
	switch body[first] {
	case '{':
		s := string(body[first:])
		m, err := refParseMessage(gjson.Parse(s), -1)
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
			m, err = refParseMessage(v, len(b.Messages))
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

// readMembers iterates over the members of the object v and stores in out those named in
// names. It reports a duplicated name, or a name equal to one of names under Unicode case
// folding but not identical, as a reason; "" means success.
func refReadMembers(v gjson.Result, names []string, out []gjson.Result, prefix string) string {
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

func refIsObject(v gjson.Result) bool { return v.Type == gjson.JSON && v.Raw[0] == '{' }
func refIsArray(v gjson.Result) bool  { return v.Type == gjson.JSON && v.Raw[0] == '[' }

func refParseMessage(v gjson.Result, index int) (Message, error) {
	invalid := func(id, reason string) error {
		return &Error{Err: ErrInvalidRequest, Index: index, ID: id, Reason: reason}
	}
	if !refIsObject(v) {
		return Message{}, invalid("", "message is not an object")
	}
	var f [numMessageFields]gjson.Result
	if reason := refReadMembers(v, messageFields[:], f[:], ""); reason != "" {
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
	if params.Exists() && params.Type != gjson.Null && !refIsObject(params) && !refIsArray(params) {
		return Message{}, invalid(m.ID, "params is not an object or array")
	}
	if params.Exists() {
		m.Params = params.Raw
	}
	if m.Method != MethodToolsCall {
		if !refIsObject(params) {
			return m, nil
		}
		var p [numToolFields]gjson.Result
		if reason := refReadMembers(params, toolFields[:], p[:], "params."); reason != "" {
			return Message{}, invalid(m.ID, reason)
		}
		if refIsObject(p[fMeta]) {
			m.Meta = p[fMeta].Raw
		}
		switch m.Method {
		case MethodResourcesRead:
			if p[fURI].Type == gjson.String {
				m.Name = p[fURI].Str
			}
		case MethodPromptsGet:
			if p[fName].Type == gjson.String {
				m.Name = p[fName].Str
			}
		}
		return m, nil
	}
	if !refIsObject(params) {
		return Message{}, invalid(m.ID, "tools/call params is not an object")
	}
	var p [numToolFields]gjson.Result
	if reason := refReadMembers(params, toolFields[:], p[:], "params."); reason != "" {
		return Message{}, invalid(m.ID, reason)
	}
	if refIsObject(p[fMeta]) {
		m.Meta = p[fMeta].Raw
	}
	name := p[fName]
	if name.Type != gjson.String || name.Str == "" {
		return Message{}, invalid(m.ID, "tools/call params.name is not a non-empty string")
	}
	if !cleanText(name.Str) {
		return Message{}, invalid(m.ID, "tools/call params.name is not clean text")
	}
	m.Tool = name.Str
	m.Name = name.Str
	switch args := p[fArguments]; {
	case refIsObject(args):
		m.Arguments = args.Raw
	case args.Exists() && args.Type != gjson.Null:
		return Message{}, invalid(m.ID, "tools/call params.arguments is not an object")
	}
	return m, nil
}

// checkDepth reports whether the nesting of objects and arrays in body stays within max.
// It skips string contents; body need not be valid JSON.
func refCheckDepth(body []byte, max int) bool {
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
