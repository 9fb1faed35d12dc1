package jsonrpc

import (
	"math/bits"
	"strconv"
	"unsafe"

	"github.com/mcpmesh/gateway/shared/jsontext"
	"github.com/mcpmesh/gateway/shared/wordscan"
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
		return Batch{}, notJSON(body)
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

// notJSON returns the error for a body the scan stopped in: at the first byte that is not
// JSON, or at the first container too deep. jsontext says which (a rare path, not worth a
// verdict of the scan's own).
func notJSON(body []byte) error {
	if jsontext.Validate(body, MaxDepth) == jsontext.TooDeep {
		return parseError("nesting deeper than " + strconv.Itoa(MaxDepth))
	}
	return parseError("invalid JSON")
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
// names are messageFields (nested not nil) or toolFields, whose names plainKeys holds.
func (r *reqScan) members(i, depth int, names, out []string, prefix string, nested *nestedMembers) (int, string) {
	reason := ""
	i, end, ok := r.open(i, depth, '}')
	if !ok {
		return -1, ""
	}
	for i >= 0 {
		field, at := -1, -1
		if reason == "" && i+9 <= len(r.s) && r.s[i] == '"' {
			// A key written without escapes in at most seven bytes, as all names read here
			// but "arguments" are, is found and matched in one word, without the calls of
			// textScan.key and memberIndex: w is the seven bytes after the opening quote, n
			// the key's length, where its closing quote is.
			w, n := wordscan.Load(r.s, i)>>8, 7
			if q := wordscan.Byte(w, '"'); q != 0 {
				n = bits.TrailingZeros64(q) / 8
				w &= 1<<(8*n) - 1
			} else if r.s[i+8] != '"' {
				n = -1
			}
			// A word that matches is the name's bytes, then a quote: a valid key, and its
			// own value.
			w |= uint64(n+1) << 56
			if e := &plainKeys[plainKeySlot(w)]; n >= 0 && e.word == w && e.message == (nested != nil) {
				field = int(e.field)
				if at = skipSpaceString(r.s, i+n+2); r.peek(at) != ':' {
					return -1, ""
				}
				at = skipSpaceString(r.s, at+1)
			}
		}
		if field < 0 {
			var rawKey string
			if rawKey, at = r.key(i); at < 0 {
				return -1, ""
			}
			if reason == "" {
				if field = memberIndex(names, rawKey[1:len(rawKey)-1]); field < 0 {
					field, reason = matchEscaped(names, rawKey, prefix)
				}
			}
		}
		if field >= 0 && out[field] != "" {
			reason = "duplicate member " + prefix + names[field]
			field = -1
		}
		switch c := r.peek(at); {
		case c == '"':
			end = -1
			if at+9 <= len(r.s) {
				// A string of up to seven bytes without escapes, most values read here,
				// ends within one word. The lowest byte the tests mark is exact for any
				// bytes (Below's included: a byte with its top bit set neither qualifies
				// nor borrows), as in jsontext's string scan.
				w := wordscan.Load(r.s, at) >> 8
				sp := wordscan.Byte(w, '"') | wordscan.Byte(w, '\\') | wordscan.Below(w, 0x20)
				if n := bits.TrailingZeros64(sp) / 8; r.s[at+1+n] == '"' {
					end = at + 2 + n
				}
			}
			if end < 0 {
				end = jsontext.StringEnd(r.b, at+1)
			}
		case c >= '1' && c <= '9':
			// An integer (most ids) up to its end; a fraction or an exponent, and the end
			// of the text, left to validValueEnd.
			end = at + 1
			for end < len(r.s) && isDigit(r.s[end]) {
				end++
			}
			if end == len(r.s) || r.s[end] == '.' || r.s[end] == 'e' || r.s[end] == 'E' {
				end = validValueEnd(r.b, at, depth+1)
			}
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

// Member names as little-endian words of their bytes with their length plus one in the top
// byte (never zero), for the match of plain keys in reqScan.members.
const (
	wordID      = 'i' | 'd'<<8 | 3<<56
	wordURI     = 'u' | 'r'<<8 | 'i'<<16 | 4<<56
	wordName    = 'n' | 'a'<<8 | 'm'<<16 | 'e'<<24 | 5<<56
	wordError   = 'e' | 'r'<<8 | 'r'<<16 | 'o'<<24 | 'r'<<32 | 6<<56
	wordMeta    = '_' | 'm'<<8 | 'e'<<16 | 't'<<24 | 'a'<<32 | 6<<56
	wordMethod  = 'm' | 'e'<<8 | 't'<<16 | 'h'<<24 | 'o'<<32 | 'd'<<40 | 7<<56
	wordParams  = 'p' | 'a'<<8 | 'r'<<16 | 'a'<<24 | 'm'<<32 | 's'<<40 | 7<<56
	wordResult  = 'r' | 'e'<<8 | 's'<<16 | 'u'<<24 | 'l'<<32 | 't'<<40 | 7<<56
	wordJSONRPC = 'j' | 's'<<8 | 'o'<<16 | 'n'<<24 | 'r'<<32 | 'p'<<40 | 'c'<<48 | 8<<56
)

// plainKeyHash spreads the words above over the 16 slots of plainKeys, one each: a perfect
// hash (the multiplier was found by trying odd numbers; plainKeys does not compile if two
// words share a slot).
const plainKeyHash = 0x2cb85f3f4a24e39b

func plainKeySlot(w uint64) uint64 { return w * plainKeyHash >> 60 }

// plainKeyEntry is a slot of plainKeys: a name's word, its index in messageFields (message) or
// toolFields. An empty slot's word is zero, which no key's word is.
type plainKeyEntry struct {
	word    uint64
	field   int8
	message bool
}

// plainKeys is the read-only table of the names' words.
var plainKeys = [16]plainKeyEntry{
	(wordID * plainKeyHash & (1<<64 - 1)) >> 60:      {wordID, fID, true},
	(wordError * plainKeyHash & (1<<64 - 1)) >> 60:   {wordError, fError, true},
	(wordMethod * plainKeyHash & (1<<64 - 1)) >> 60:  {wordMethod, fMethod, true},
	(wordParams * plainKeyHash & (1<<64 - 1)) >> 60:  {wordParams, fParams, true},
	(wordResult * plainKeyHash & (1<<64 - 1)) >> 60:  {wordResult, fResult, true},
	(wordJSONRPC * plainKeyHash & (1<<64 - 1)) >> 60: {wordJSONRPC, fJSONRPC, true},
	(wordName * plainKeyHash & (1<<64 - 1)) >> 60:    {wordName, fName, false},
	(wordURI * plainKeyHash & (1<<64 - 1)) >> 60:     {wordURI, fURI, false},
	(wordMeta * plainKeyHash & (1<<64 - 1)) >> 60:    {wordMeta, fMeta, false},
}

// matchEscaped returns what memberIndex misses: the index in names of the member whose raw
// key (with its quotes) is rawKey written with escapes, or -1 with the problem of a key named like
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
	// tools/call as written nearly always: without a decoding and a look for broken text, and
	// compared in pieces of the length Go compares without a call.
	if len(method) == len(MethodToolsCall)+2 && method[1:6] == "tools" && method[6:] == "/call\"" {
		m.Method = MethodToolsCall
	} else if m.Method = decodeString(method); !cleanText(m.Method) {
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
	toolsCall := len(m.Method) == len(MethodToolsCall) && m.Method[:5] == "tools" && m.Method[5:] == "/call"
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
