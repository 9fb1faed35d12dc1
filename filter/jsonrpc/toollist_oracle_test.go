package jsonrpc

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpmesh/gateway/shared/jsontext"
)

// The implementation of RewriteToolLists before the one-pass reader (toolscan.go), kept as
// the oracle of FuzzRewriteToolLists_MatchesOracle: it validates the whole body with
// jsontext.Validate, then reads each message, result and tool with the members reader of
// scan.go, which skips every value it does not need (three reads of every tool's text).

// oracleRewriteToolLists reads body, a JSON-RPC message or a batch of them sent by an MCP server,
// and returns it with the tools f.Allow refuses removed from every result that answers one of
// f.IDs. Everything else — other messages, other members, nextCursor, whitespace — is kept
// as it was. out is body itself when nothing changed. The error, wrapping ErrToolList, says
// why the body cannot be rewritten safely: not valid JSON, nested too deep, a duplicated
// member, a response whose result or tools are not what MCP says, a tool without a clean
// string name.
func oracleRewriteToolLists(body []byte, f *ToolListFilter) (out []byte, res ToolListResult, err error) {
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
		n, at, result, own, err := oracleReadResponse(text[i:], f)
		if err != nil || result == "" {
			return n, err
		}
		if b == nil {
			b = make([]byte, 0, len(text)+32)
		}
		mark := len(b)
		b = append(b, text[done:i+at]...)
		out, err := oracleAppendResult(b, result, f, &res)
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

// oracleReadResponse reads the message that starts s: the length of its text and, when it answers
// one of f.IDs (own) or, with f.AnyID, any id with a result, that result and where it starts
// in s ("" otherwise). Like readMembers it refuses a duplicated member and a member named
// like one of messageFields but for case. A response to another id than f.IDs is read as
// f.AnyID says: what is not a tools/list result passes.
func oracleReadResponse(s string, f *ToolListFilter) (n, at int, result string, own bool, err error) {
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

// oracleAppendResult appends the tools/list result obj to dst with the refused tools removed and
// its cacheScope made private.
func oracleAppendResult(dst []byte, obj string, f *ToolListFilter, res *ToolListResult) ([]byte, error) {
	seen := newOracleKeySet()
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
			if dst, n, err = oracleAppendTools(dst, m.rest(), f, res); err != nil {
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

// oracleAppendTools appends the tools array that starts s to dst with the tools f.Allow refuses
// removed, and returns the length of the array's text.
func oracleAppendTools(dst []byte, s string, f *ToolListFilter, res *ToolListResult) ([]byte, int, error) {
	if !isArray(s) {
		return nil, 0, toolListError("result.tools is not an array")
	}
	dst = append(dst, '[')
	kept := 0
	i := skipSpaceString(s, 1)
	for i < len(s) && s[i] != ']' {
		name, n, err := oracleToolName(s[i:])
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

// oracleToolName reads the tool object that starts s, whose members must all be distinct, and
// returns its name and the length of its text.
func oracleToolName(s string) (string, int, error) {
	if !isObject(s) {
		return "", 0, toolListError("a tool is not an object")
	}
	seen := newOracleKeySet()
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

// oracleKeySet is a set of member names: a list while small, a map beyond.
type oracleKeySet struct {
	arr  [16]string
	list []string
	m    map[string]struct{}
}

func newOracleKeySet() oracleKeySet { return oracleKeySet{} }

// add adds k and reports whether it was new.
func (s *oracleKeySet) add(k string) bool {
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
