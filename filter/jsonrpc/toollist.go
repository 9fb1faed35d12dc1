package jsonrpc

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpmesh/gateway/shared/jsontext"
)

// Tool lists filtered by policy (docs/tool-lists.md). The filter rewrites the responses an
// MCP server gives to the tools/list requests it let through, so that they list only the
// tools the user may call. It reads a response body (one JSON-RPC message, or a batch of
// them) the way it reads requests — validated first, then read member by member without
// decoding what it does not need — and copies everything but the removed tools byte for byte.

// MaxToolListBytes bounds a response the filter holds to rewrite a tool list: an
// application/json body, or one event of an event stream (half of Envoy's default buffer
// limit). A longer one is refused (fail closed).
const MaxToolListBytes = 512 << 10

// CodeInternalError is the JSON-RPC code of the error that replaces a tool list the filter
// cannot read safely.
const CodeInternalError = -32603

// MessageToolListRefused is the message of that error.
const MessageToolListRefused = "Internal error: the gateway could not filter the tool list"

// ErrToolList is wrapped by every error of RewriteToolLists: the response is not passed on.
var ErrToolList = errors.New("tool list cannot be filtered")

// errNotAList is the error of a result without tools.
var errNotAList = toolListError("result without tools")

// CacheScopePrivate is the cacheScope a filtered list carries (MCP 2026-07-28): it depends on
// the user.
const CacheScopePrivate = "private"

// ToolListFilter says which responses RewriteToolLists rewrites and what it keeps.
type ToolListFilter struct {
	// IDs are the keys (IDKey) of the ids of the tools/list requests whose responses are
	// rewritten; responses to other ids pass unchanged.
	IDs []string
	// Allow reports whether the tool named name, whose JSON object is raw, stays on the list.
	Allow func(name, raw string) bool
	// ForcePrivate adds "cacheScope":"private" to a rewritten result that has none. A
	// cacheScope present is always set to "private".
	ForcePrivate bool
	// AnyID rewrites every response whose result has a tools member, whatever its id (the
	// event-stream GET, where the filter has not seen the requests; a POST's answer, which
	// may carry the answer to another POST's tools/list), and passes text that is not JSON
	// as it is (no client reads it as a message). With IDs too, the responses to IDs are
	// read as without AnyID, and a body that is not JSON is refused.
	AnyID bool
}

// ToolListResult is what RewriteToolLists did.
type ToolListResult struct {
	// Lists counts the tools/list results rewritten, Removed the tools taken out of them.
	Lists, Removed int
}

// IDKey returns a key for the raw JSON id that is equal for ids a client may take for the
// same: a number is its decimal value (1, 1.0 and 1e0 are one key), and so is a string that
// JavaScript's Number() reads as a number (the TypeScript SDK matches a response to its
// request with Number(response.id), so "1", " 1 " and "0x1" answer request 1); another string
// is its decoded content. "" for anything else.
func IDKey(raw string) string {
	switch {
	case isString(raw):
		s := decodeString(raw)
		if f, ok := jsNumber(s); ok {
			return numberKey(f)
		}
		return "s" + s
	case isNumber(raw):
		if !strings.ContainsAny(raw, ".eE") {
			if raw == "-0" {
				return "n0"
			}
			return "n" + raw
		}
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return "n" + raw
		}
		return numberKey(f)
	case isNull(raw):
		return "null"
	}
	return ""
}

func numberKey(f float64) string {
	if f == float64(int64(f)) && f > -(1<<53) && f < 1<<53 {
		return "n" + strconv.FormatInt(int64(f), 10)
	}
	return "n" + strconv.FormatFloat(f, 'g', -1, 64)
}

// jsNumber reads s as JavaScript's Number(s) does, closely enough to match what it matches:
// surrounding white space dropped, "" is 0, decimal literals with an optional sign, 0x, 0o and
// 0b integers, Infinity. ok is false for what Number() makes NaN.
func jsNumber(s string) (float64, bool) {
	s = strings.TrimFunc(s, func(r rune) bool {
		switch r {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0xa0, 0xfeff, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
			return true
		}
		return r >= 0x2000 && r <= 0x200a
	})
	if s == "" {
		return 0, true
	}
	if len(s) > 2 && s[0] == '0' {
		base := 0
		switch s[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 0 {
			v, err := strconv.ParseUint(s[2:], base, 64)
			if err != nil || strings.Contains(s[2:], "_") {
				return 0, false
			}
			return float64(v), true
		}
	}
	switch strings.TrimLeft(s, "+-") {
	case "Infinity":
		return 0, false // no request has that id
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return 0, false // ParseFloat would take "inf", "nan", "1_0" and hex floats
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

func toolListError(reason string) error {
	return errors.Join(ErrToolList, errors.New(reason))
}

// RewriteToolLists reads body, a JSON-RPC message or a batch of them sent by an MCP server,
// and returns it with the tools f.Allow refuses removed from every result that answers one of
// f.IDs. Everything else — other messages, other members, nextCursor, whitespace — is kept
// as it was. out is body itself when nothing changed. The error, wrapping ErrToolList, says
// why the body cannot be rewritten safely: not valid JSON, nested too deep, a duplicated
// member, a response whose result or tools are not what MCP says, a tool without a clean
// string name.
func RewriteToolLists(body []byte, f *ToolListFilter) (out []byte, res ToolListResult, err error) {
	if len(body) > MaxToolListBytes {
		return nil, res, toolListError("longer than " + strconv.Itoa(MaxToolListBytes) + " bytes")
	}
	switch jsontext.Validate(body, MaxDepth) {
	case jsontext.TooDeep:
		return nil, res, toolListError("nested deeper than " + strconv.Itoa(MaxDepth))
	case jsontext.Invalid:
		if f.AnyID && len(f.IDs) == 0 {
			return body, res, nil
		}
		return nil, res, toolListError("not JSON")
	}
	text := string(body)
	start := skipSpaceString(text, 0)
	if start == len(text) {
		return nil, res, toolListError("empty")
	}
	var b []byte // the output, once something changed
	done := 0    // text[:done] is in b
	rewrite := func(i int) (int, error) {
		n, at, result, own, err := readResponse(text[i:], f)
		if err != nil || result == "" {
			return n, err
		}
		if b == nil {
			b = make([]byte, 0, len(text)+32)
		}
		mark := len(b)
		b = append(b, text[done:i+at]...)
		out, err := appendResult(b, result, f, &res)
		if err != nil {
			if errors.Is(err, errNotAList) && !own {
				b = b[:mark] // a result of another method: unchanged
				return n, nil
			}
			return 0, err
		}
		b = out
		done = i + at + len(result)
		return n, nil
	}
	switch text[start] {
	case '{':
		if _, err := rewrite(start); err != nil {
			return nil, res, err
		}
	case '[':
		for i := skipSpaceString(text, start+1); i < len(text) && text[i] != ']'; {
			if text[i] != '{' {
				return nil, res, toolListError("batch element is not an object")
			}
			n, err := rewrite(i)
			if err != nil {
				return nil, res, err
			}
			if i = skipSpaceString(text, i+n); i < len(text) && text[i] == ',' {
				i = skipSpaceString(text, i+1)
			}
		}
	default:
		return nil, res, toolListError("not an object or an array")
	}
	if b == nil {
		return body, res, nil
	}
	return append(b, text[done:]...), res, nil
}

// readResponse reads the message that starts s: the length of its text and, when it answers
// one of f.IDs (own) or, with f.AnyID, any id with a result, that result and where it starts
// in s ("" otherwise). Like readMembers it refuses a duplicated member and a member named
// like one of messageFields but for case. A response to another id than f.IDs is read as
// f.AnyID says: what is not a tools/list result passes.
func readResponse(s string, f *ToolListFilter) (n, at int, result string, own bool, err error) {
	var v [numMessageFields]string
	m := newMembers(s)
	for {
		rawKey := m.key()
		if rawKey == "" {
			break
		}
		key := decodeString(rawKey)
		i := slices.Index(messageFields[:], key)
		if i < 0 {
			for _, name := range messageFields {
				if strings.EqualFold(key, name) {
					return 0, 0, "", false, toolListError("member name differs from " + name + " only by case")
				}
			}
			m.value()
			continue
		}
		if v[i] != "" {
			return 0, 0, "", false, toolListError("duplicate member " + messageFields[i])
		}
		if i == fResult {
			at = m.i
		}
		v[i] = m.value()
	}
	n = m.end
	if v[fMethod] != "" || (v[fID] == "" && !f.AnyID) {
		return n, 0, "", false, nil // a request or a notification of the server's
	}
	own = v[fID] != "" && slices.Contains(f.IDs, IDKey(v[fID]))
	if !f.AnyID && !own {
		return n, 0, "", false, nil
	}
	switch {
	case v[fResult] == "" && v[fError] == "" && !own:
		return n, 0, "", false, nil
	case v[fResult] == "" && v[fError] == "":
		return 0, 0, "", own, toolListError("response without result or error")
	case v[fResult] == "":
		return n, 0, "", own, nil // an error answers the list: nothing to filter
	case v[fError] != "":
		return 0, 0, "", own, toolListError("response with both result and error")
	case !isObject(v[fResult]) && !own:
		return n, 0, "", false, nil
	case !isObject(v[fResult]):
		return 0, 0, "", own, toolListError("result is not an object")
	}
	return n, at, v[fResult], own, nil
}

// appendResult appends the tools/list result obj to dst with the refused tools removed and
// its cacheScope made private.
func appendResult(dst []byte, obj string, f *ToolListFilter, res *ToolListResult) ([]byte, error) {
	seen := newKeySet()
	m := newMembers(obj)
	last := 0 // obj[last:at] is copied next
	hasTools, hasScope := false, false
	var err error
	for {
		rawKey := m.key()
		if rawKey == "" {
			break
		}
		key := decodeString(rawKey)
		if !seen.add(key) {
			return nil, toolListError("duplicate member result." + quoteKey(key))
		}
		at := m.i
		switch {
		case key == "tools":
			hasTools = true
			dst = append(dst, obj[last:at]...)
			var n int
			if dst, n, err = appendTools(dst, m.rest(), f, res); err != nil {
				return nil, err
			}
			m.skip(n)
			last = at + n
		case key == "cacheScope":
			hasScope = true
			dst = append(dst, obj[last:at]...)
			dst = append(dst, `"`+CacheScopePrivate+`"`...)
			last = at + len(m.value())
		case strings.EqualFold(key, "tools") || strings.EqualFold(key, "cacheScope"):
			return nil, toolListError("member name differs from result." + quoteKey(key) + " only by case")
		default:
			m.value()
		}
	}
	if !hasTools {
		return nil, errNotAList
	}
	end := m.end - 1 // the closing brace
	dst = append(dst, obj[last:end]...)
	if !hasScope && f.ForcePrivate {
		dst = append(dst, `,"cacheScope":"`+CacheScopePrivate+`"`...)
	}
	res.Lists++
	return append(dst, obj[end:m.end]...), nil
}

// appendTools appends the tools array that starts s to dst with the tools f.Allow refuses
// removed, and returns the length of the array's text.
func appendTools(dst []byte, s string, f *ToolListFilter, res *ToolListResult) ([]byte, int, error) {
	if !isArray(s) {
		return nil, 0, toolListError("result.tools is not an array")
	}
	dst = append(dst, '[')
	kept := 0
	i := skipSpaceString(s, 1)
	for i < len(s) && s[i] != ']' {
		name, n, err := toolName(s[i:])
		if err != nil {
			return nil, 0, err
		}
		if f.Allow(name, s[i:i+n]) {
			if kept > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, s[i:i+n]...)
			kept++
		} else {
			res.Removed++
		}
		if i = skipSpaceString(s, i+n); i < len(s) && s[i] == ',' {
			i = skipSpaceString(s, i+1)
		}
	}
	return append(dst, ']'), min(i+1, len(s)), nil
}

// toolName reads the tool object that starts s, whose members must all be distinct, and
// returns its name and the length of its text.
func toolName(s string) (string, int, error) {
	if !isObject(s) {
		return "", 0, toolListError("a tool is not an object")
	}
	seen := newKeySet()
	name := ""
	m := newMembers(s)
	for {
		rawKey := m.key()
		if rawKey == "" {
			break
		}
		key := decodeString(rawKey)
		if !seen.add(key) {
			return "", 0, toolListError("duplicate member tools[]." + quoteKey(key))
		}
		v := m.value()
		switch {
		case key == "name":
			if !isString(v) {
				return "", 0, toolListError("tools[].name is not a string")
			}
			name = decodeString(v)
			if name == "" || !cleanText(name) {
				return "", 0, toolListError("tools[].name is empty or not clean text")
			}
		case strings.EqualFold(key, "name"):
			return "", 0, toolListError("member name differs from tools[].name only by case")
		}
	}
	if name == "" {
		return "", 0, toolListError("a tool has no name")
	}
	return name, m.end, nil
}

// quoteKey returns key for an error message, shortened and quoted.
func quoteKey(key string) string {
	if len(key) > 40 {
		key = key[:40]
	}
	return strconv.Quote(key)
}

// keySet is a set of member names: a list while small, a map beyond.
type keySet struct {
	arr  [16]string
	list []string
	m    map[string]struct{}
}

func newKeySet() keySet { return keySet{} }

// add adds k and reports whether it was new.
func (s *keySet) add(k string) bool {
	if s.m != nil {
		if _, ok := s.m[k]; ok {
			return false
		}
		s.m[k] = struct{}{}
		return true
	}
	if s.list == nil {
		s.list = s.arr[:0]
	}
	for _, x := range s.list {
		if x == k {
			return false
		}
	}
	s.list = append(s.list, k)
	if len(s.list) > 16 {
		s.m = make(map[string]struct{}, 2*len(s.list))
		for _, x := range s.list {
			s.m[x] = struct{}{}
		}
	}
	return true
}

// ToolListErrorBody returns the JSON-RPC error that replaces a tool list the filter cannot
// read: code -32603 with the id of the request (null when it is not one id) and the gateway's
// request id in data.
func ToolListErrorBody(id, requestID string) []byte {
	return AppendErrorResponse(nil, id, CodeInternalError, MessageToolListRefused, requestID)
}

// MayHoldToolList reports whether body may hold a member named tools: the name itself, or a
// string with a \u escape of one of its letters (t, o, l and s are \u0074, \u006f, \u006c
// and \u0073; JSON has no other escape that makes a letter). A body without them holds no
// tool list for any reader, so it need not be read (the cost of ordinary answers).
func MayHoldToolList(body []byte) bool {
	return containsToolsKey(body) || bytes.Contains(body, escape6) || bytes.Contains(body, escape7)
}

// containsToolsKey is bytes.Contains(body, toolsKey). It looks for the key's 'l', rare in
// JSON, and checks each one found: bytes.Index starts from the quote, and after a few quotes
// that start no match it falls back to a Rabin-Karp hash of every byte, which costs about 75
// instructions a byte in the wasm filter (there is no assembly for it there).
func containsToolsKey(body []byte) bool {
	const l = 4 // the index of 'l' in toolsKey
	for i := l; i < len(body); i++ {
		j := bytes.IndexByte(body[i:], 'l')
		if j < 0 {
			return false
		}
		i += j
		if i+len(toolsKey)-l <= len(body) && bytes.Equal(body[i-l:i-l+len(toolsKey)], toolsKey) {
			return true
		}
	}
	return false
}

// MarkerOverlap is how many bytes of one chunk MayHoldToolList must see again with the next,
// so that a name split between them is found.
const MarkerOverlap = len(`"tools"`) - 1

var (
	toolsKey = []byte(`"tools"`)
	escape6  = []byte(`\u006`)
	escape7  = []byte(`\u007`)
)
