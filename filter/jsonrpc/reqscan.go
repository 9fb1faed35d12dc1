package jsonrpc

import (
	"strconv"
	"unsafe"

	"github.com/mcpmesh/gateway/shared/jsontext"
)

// The one pass of Parse over a request body: it validates the body as jsontext.Validate does
// (validValueEnd and textScan's pieces, as the tool-list reader does) and, on the way, reads
// the members of each message and of its params that policy needs, checking them as
// readMembers does. It replaced a validation of the whole body followed by a second read of
// the members (parse_oracle_test.go keeps that reader; FuzzParse_MatchesTwoPassReader
// compares the two): in the wasm filter every pass over the bytes counts, and so does every
// function on the request's path, whose machine code a request fetches mostly from memory.
//
// A problem with a message is only reported once the whole body is known to be JSON, so that
// a body that is not JSON is a parse error wherever the problem lies, as before.

// reqScan reads a request body once.
type reqScan struct {
	textScan
	err *Error // the first problem with a message, reported if the body is valid JSON
}

func parse(dst []Message, body []byte, owned bool) (Batch, error) {
	first := skipSpaceString(unsafe.String(unsafe.SliceData(body), len(body)), 0)
	if first == len(body) {
		return Batch{}, parseError("empty body")
	}
	// Every string of the result shares the text: the body itself, or one copy of it.
	var s string
	if owned {
		s = unsafe.String(&body[0], len(body))
	} else {
		s = string(body)
	}
	r := reqScan{textScan: textScan{b: unsafe.Slice(unsafe.StringData(s), len(s)), s: s}}
	var (
		m   Message
		end int
	)
	switch s[first] {
	case '{':
		m, end = r.message(first, 0, -1)
	case '[':
		dst, end = r.batch(first, dst)
	default:
		end = validValueEnd(r.b, first, 0)
	}
	if end < 0 || skipSpaceString(s, end) != len(s) {
		// The scan stops at the first byte that is not JSON, or at the first container too
		// deep; jsontext says which (a rare path, not worth a verdict of its own).
		if jsontext.Validate(body, MaxDepth) == jsontext.TooDeep {
			return Batch{}, parseError("nesting deeper than " + strconv.Itoa(MaxDepth))
		}
		return Batch{}, parseError("invalid JSON")
	}
	if r.err != nil {
		return Batch{}, r.err
	}
	switch s[first] {
	case '{':
		return Batch{Messages: append(dst, m)}, nil
	case '[':
		if len(dst) == 0 {
			return Batch{}, &Error{Err: ErrInvalidRequest, Index: -1, Reason: "empty batch"}
		}
		return Batch{Array: true, Messages: dst}, nil
	}
	return Batch{}, &Error{Err: ErrInvalidRequest, Index: -1, Reason: "body is not an object or an array"}
}

// batch reads the array at i, appending its messages to dst up to the first problem (r.err);
// the elements after it are only validated.
func (r *reqScan) batch(i int, dst []Message) ([]Message, int) {
	i, end, ok := r.open(i, 0, ']')
	for ok && i >= 0 {
		switch {
		case r.err != nil:
			end = validValueEnd(r.b, i, 1)
		case r.peek(i) != '{':
			r.err = &Error{Err: ErrInvalidRequest, Index: len(dst), Reason: "message is not an object"}
			end = validValueEnd(r.b, i, 1)
		default:
			var m Message
			if m, end = r.message(i, 1, len(dst)); r.err == nil {
				dst = append(dst, m)
			}
		}
		if end < 0 {
			return dst, -1
		}
		i, end, ok = r.next(end, ']')
	}
	if !ok {
		return dst, -1
	}
	return dst, end
}

// message reads the message object at i, within depth containers, at index in the batch (-1
// for a body of one message): the message and the end of its text, its problem in r.err.
func (r *reqScan) message(i, depth, index int) (m Message, end int) {
	var f [numMessageFields]string
	inParams := nestedMembers{index: fParams, names: toolFields[:], prefix: "params."}
	end, reason := r.members(i, depth, messageFields[:], f[:], "", &inParams)
	if end < 0 {
		return m, -1
	}
	id := ""
	if reason == "" {
		m, id, reason = checkMessage(&f, &inParams)
	}
	if reason != "" {
		r.err = &Error{Err: ErrInvalidRequest, Index: index, ID: id, Reason: reason}
	}
	return m, end
}

// members validates the object at i, within depth containers, and reads it as readMembers
// does: it stores in out the raw values of the members named in names, and returns the end of
// the object's text (-1 if it is not valid) and the first problem with the members, after
// which it only validates. nested, when not nil, names a member whose value, if an object, is
// read likewise (its problem goes to nested.reason).
//
// names are messageFields or toolFields, which fieldIndex matches without a call.
func (r *reqScan) members(i, depth int, names, out []string, prefix string, nested *nestedMembers) (int, string) {
	reason := ""
	i, end, ok := r.open(i, depth, '}')
	if !ok {
		return -1, ""
	}
	for i >= 0 {
		rawKey, at := r.key(i)
		if at < 0 {
			return -1, ""
		}
		field := -1
		if reason == "" {
			if field = fieldIndex(names, rawKey[1:len(rawKey)-1]); field < 0 {
				field, reason = matchEscaped(names, rawKey, prefix)
			}
			if field >= 0 && out[field] != "" {
				reason = "duplicate member " + prefix + names[field]
				field = -1
			}
		}
		switch c := r.peek(at); {
		case c == '"': // most values, without a call more
			end = jsontext.StringEnd(r.b, at+1)
		case c == '{' && nested != nil && field == nested.index:
			end, nested.reason = r.members(at, depth+1, nested.names, nested.out[:], nested.prefix, nil)
		default:
			end = validValueEnd(r.b, at, depth+1)
		}
		if end < 0 {
			return -1, ""
		}
		if field >= 0 {
			out[field] = r.s[at:end]
		}
		switch end = skipSpaceString(r.s, end); r.peek(end) {
		case ',':
			i = skipSpaceString(r.s, end+1)
		case '}':
			return end + 1, reason
		default:
			return -1, ""
		}
	}
	return end, reason
}

// fieldIndex returns the index of key in names, messageFields or toolFields, or -1. It
// compares key with constants, which Go compiles to a few byte comparisons each (up to six
// bytes in wasm), rather than with the elements of names (a call to runtime.memequal, a loop
// over the bytes, each).
func fieldIndex(names []string, key string) int {
	if len(names) == numToolFields {
		switch len(key) {
		case 3:
			if key == "uri" {
				return fURI
			}
		case 4:
			if key == "name" {
				return fName
			}
		case 5:
			if key == "_meta" {
				return fMeta
			}
		case 9:
			if key[:5] == "argum" && key[5:] == "ents" {
				return fArguments
			}
		}
		return -1
	}
	switch len(key) {
	case 2:
		if key == "id" {
			return fID
		}
	case 5:
		if key == "error" {
			return fError
		}
	case 6:
		switch key {
		case "method":
			return fMethod
		case "params":
			return fParams
		case "result":
			return fResult
		}
	case 7:
		if key[:4] == "json" && key[4:] == "rpc" {
			return fJSONRPC
		}
	}
	return -1
}

// matchEscaped returns what fieldIndex misses: the index in names of the member whose raw key
// (with its quotes) is rawKey written with escapes, or -1 with the problem of a key named like
// one of them but for case ("" if none).
func matchEscaped(names []string, rawKey, prefix string) (int, string) {
	key := rawKey[1 : len(rawKey)-1]
	// An escape makes the value shorter than its text.
	if v := jsontext.Unescape(key); len(v) != len(key) {
		if i := memberIndex(names, v); i >= 0 {
			return i, ""
		}
		key = v
	}
	return -1, caseVariant(names, key, prefix)
}

// checkMessage checks the members read of a message (f, and the members of params in p) and
// returns what the gateway reads of it, or the message's raw id as far as it could be read and
// the problem. Its problems are strings, made an Error by the caller in one place, because each
// construction of an Error costs a few hundred bytes of machine code.
func checkMessage(f *[numMessageFields]string, p *nestedMembers) (m Message, id, problem string) {
	if v := f[fID]; v != "" {
		if !isString(v) && !isNumber(v) && !isNull(v) {
			return m, "", "id is not a string, number or null"
		}
		m.ID = v
	}
	// "2.0" as written nearly always, without a decoding.
	if v := f[fJSONRPC]; v != `"2.0"` && (!isString(v) || decodeString(v) != "2.0") {
		return m, m.ID, `jsonrpc is not "2.0"`
	}
	hasResult := f[fResult] != "" || f[fError] != ""
	method := f[fMethod]
	if method == "" {
		switch {
		case !hasResult:
			return m, m.ID, "no method, result or error"
		case f[fResult] != "" && f[fError] != "":
			return m, m.ID, "both result and error"
		case m.ID == "":
			return m, "", "response without id"
		case f[fParams] != "":
			return m, m.ID, "response with params"
		}
		m.Kind = KindResponse
		return m, "", ""
	}
	if !isString(method) {
		return m, m.ID, "method is not a string"
	}
	if hasResult {
		return m, m.ID, "method together with result or error"
	}
	m.Method = decodeString(method)
	if !cleanText(m.Method) {
		return m, m.ID, "method is not clean text"
	}
	m.Kind = KindNotification
	if m.ID != "" {
		m.Kind = KindRequest
	}
	params := f[fParams]
	if params != "" && !isNull(params) && !isObject(params) && !isArray(params) {
		return m, m.ID, "params is not an object or array"
	}
	m.Params = params
	toolsCall := m.Method == MethodToolsCall
	if !isObject(params) {
		if toolsCall {
			return m, m.ID, "tools/call params is not an object"
		}
		return m, "", ""
	}
	// members has read the members of params already.
	if p.reason != "" {
		return m, m.ID, p.reason
	}
	v := &p.out
	if isObject(v[fMeta]) {
		m.Meta = v[fMeta]
	}
	if !toolsCall {
		switch m.Method {
		case MethodResourcesRead:
			if isString(v[fURI]) {
				m.Name = decodeString(v[fURI])
			}
		case MethodPromptsGet:
			if isString(v[fName]) {
				m.Name = decodeString(v[fName])
			}
		}
		return m, "", ""
	}
	if name := v[fName]; isString(name) {
		m.Tool = decodeString(name)
	}
	if m.Tool == "" {
		return m, m.ID, "tools/call params.name is not a non-empty string"
	}
	if !cleanText(m.Tool) {
		return m, m.ID, "tools/call params.name is not clean text"
	}
	m.Name = m.Tool
	switch args := v[fArguments]; {
	case isObject(args):
		m.Arguments = args
	case args != "" && !isNull(args):
		return m, m.ID, "tools/call params.arguments is not an object"
	}
	return m, "", ""
}
