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
//
// The body is read once (toolScan, which validates it) and f.Allow is called only for a
// valid body, tool by tool in order, up to the first problem.
func RewriteToolLists(body []byte, f *ToolListFilter) (out []byte, res ToolListResult, err error) {
	if len(body) > MaxToolListBytes {
		return nil, res, toolListError("longer than " + strconv.Itoa(MaxToolListBytes) + " bytes")
	}
	text := string(body)
	sc := toolScan{textScan: textScan{b: body, s: text}}
	if !sc.scan() {
		switch jsontext.Validate(body, MaxDepth) {
		case jsontext.TooDeep:
			return nil, res, toolListError("nested deeper than " + strconv.Itoa(MaxDepth))
		case jsontext.Invalid:
			if f.AnyID && len(f.IDs) == 0 {
				return body, res, nil
			}
		}
		return nil, res, toolListError("not JSON") // Valid here would be a bug of toolScan: fail closed
	}
	if start := skipSpaceString(text, 0); text[start] != '{' && text[start] != '[' {
		return nil, res, toolListError("not an object or an array")
	}
	var b []byte // the output, once something changed
	done := 0    // text[:done] is in b
	for k := range sc.msgs {
		m := &sc.msgs[k]
		if m.notObject {
			return nil, res, toolListError("batch element is not an object")
		}
		own, err := m.response(f)
		if err != nil {
			return nil, res, err
		}
		if m.v[fResult] == "" {
			continue // not a result to filter
		}
		if b == nil {
			b = make([]byte, 0, len(text)+32)
		}
		mark := len(b)
		b = append(b, text[done:m.resultAt]...)
		out, err := appendResult(b, text, m.resultAt, &m.res, sc.tools, f, &res)
		if err != nil {
			if errors.Is(err, errNotAList) && !own {
				b = b[:mark] // a result of another method: unchanged
				continue
			}
			return nil, res, err
		}
		b = out
		done = m.res.end
	}
	if b == nil {
		return body, res, nil
	}
	return append(b, text[done:]...), res, nil
}

// response decides whether the message answers one of f.IDs (own) or, with f.AnyID, any id
// with a result, an object then in v[fResult]; when it does not, it clears v[fResult]. Like
// readMembers it refuses a duplicated member and a member named like one of messageFields
// but for case (m.err). A response to
// another id than f.IDs is read as f.AnyID says: what is not a tools/list result passes.
func (m *msgIndex) response(f *ToolListFilter) (own bool, err error) {
	if m.err != "" {
		return false, toolListError(m.err)
	}
	v := &m.v
	pass := func() (bool, error) {
		v[fResult] = ""
		return false, nil
	}
	if v[fMethod] != "" || (v[fID] == "" && !f.AnyID) {
		return pass() // a request or a notification of the server's
	}
	own = v[fID] != "" && slices.Contains(f.IDs, IDKey(v[fID]))
	if !f.AnyID && !own {
		return pass()
	}
	switch {
	case v[fResult] == "" && v[fError] == "" && !own:
		return pass()
	case v[fResult] == "" && v[fError] == "":
		return own, toolListError("response without result or error")
	case v[fResult] == "":
		return pass() // an error answers the list: nothing to filter
	case v[fError] != "":
		return own, toolListError("response with both result and error")
	case !isObject(v[fResult]) && !own:
		return pass()
	case !isObject(v[fResult]):
		return own, toolListError("result is not an object")
	}
	return own, nil
}

// appendResult appends the tools/list result that starts at text[at] (read into r) to dst
// with the refused tools removed and its cacheScope made private. tools holds r's tools.
func appendResult(dst []byte, text string, at int, r *resultIndex, tools []toolIndex, f *ToolListFilter, res *ToolListResult) ([]byte, error) {
	if r.hasTools {
		tools = tools[r.first : r.first+r.n]
		for k := range tools {
			if tools[k].kept = f.Allow(tools[k].name, text[tools[k].start:tools[k].end]); !tools[k].kept {
				res.Removed++
			}
		}
		if r.toolsErr != "" {
			return nil, toolListError(r.toolsErr)
		}
	}
	if r.err != "" {
		return nil, toolListError(r.err)
	}
	if !r.hasTools {
		return nil, errNotAList
	}
	last := at // text[last:] is copied next
	if r.hasScope && r.scopeAt < r.toolsAt {
		dst = append(dst, text[last:r.scopeAt]...)
		dst = append(dst, `"`+CacheScopePrivate+`"`...)
		last = r.scopeEnd
	}
	dst = append(dst, text[last:r.toolsAt]...)
	dst = appendTools(dst, text, tools)
	last = r.toolsEnd
	if r.hasScope && r.scopeAt > r.toolsAt {
		dst = append(dst, text[last:r.scopeAt]...)
		dst = append(dst, `"`+CacheScopePrivate+`"`...)
		last = r.scopeEnd
	}
	end := r.end - 1 // the closing brace
	dst = append(dst, text[last:end]...)
	if !r.hasScope && f.ForcePrivate {
		dst = append(dst, `,"cacheScope":"`+CacheScopePrivate+`"`...)
	}
	res.Lists++
	return append(dst, text[end:r.end]...), nil
}

// appendTools appends the array of the kept tools to dst, separated by commas: a run of kept
// tools separated by commas alone in text is copied at once.
func appendTools(dst []byte, text string, tools []toolIndex) []byte {
	dst = append(dst, '[')
	first := true
	for k := 0; k < len(tools); {
		if !tools[k].kept {
			k++
			continue
		}
		j := k + 1
		for j < len(tools) && tools[j].kept && tools[j].adjacent {
			j++
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, text[tools[k].start:tools[j-1].end]...)
		k = j
	}
	return append(dst, ']')
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
	n   int
	arr [16]string
	m   map[string]struct{}
}

// add adds k and reports whether it was new.
func (s *keySet) add(k string) bool {
	if s.m != nil {
		if _, ok := s.m[k]; ok {
			return false
		}
		s.m[k] = struct{}{}
		return true
	}
	for _, x := range s.arr[:s.n] {
		if x == k {
			return false
		}
	}
	if s.n < len(s.arr) {
		s.arr[s.n] = k
		s.n++
		return true
	}
	s.m = make(map[string]struct{}, 2*len(s.arr))
	for _, x := range s.arr {
		s.m[x] = struct{}{}
	}
	s.m[k] = struct{}{}
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
