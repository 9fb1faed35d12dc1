package jsonrpc

import (
	"slices"
	"strings"
)

// The one pass of RewriteToolLists over a response body: it validates the body as
// jsontext.Validate does and, on the way, indexes what the rewrite needs — each message's
// members, its result's tools and cacheScope, each tool's span and name — together with the
// first problem found at each level. Nothing is decided here: RewriteToolLists replays the
// index in the order the members come, calls f.Allow and copies the text, so that a body that
// is not JSON is refused before any tool is shown to the policy, and the checks fail in the
// order they always did.
//
// The validation (validValueEnd, textscan.go) is jsontext.Validate's, started at a value
// inside the body rather than at its beginning (jsontext has no such entry point);
// FuzzRewriteToolLists_MatchesOracle checks that both accept exactly the same texts.

// listIndex is what toolScan finds in a body.
type listIndex struct {
	msgs  []msgIndex  // the messages (batch elements) in order
	tools []toolIndex // the tools of every result, each result's in a run
}

// msgIndex is one message of the body, or one batch element.
type msgIndex struct {
	notObject bool                     // a batch element that is not an object
	err       string                   // the first problem with its members, or ""
	v         [numMessageFields]string // the raw values of messageFields
	resultAt  int                      // where v[fResult] starts in the body
	res       resultIndex              // what is in v[fResult] when it is an object
}

// resultIndex is what appendResult reads of a result object, up to its first problem.
type resultIndex struct {
	end      int    // after the closing brace
	err      string // the first problem with the members, or ""
	hasTools bool   // a member tools came before err
	toolsAt  int    // its value, text[toolsAt:toolsEnd]
	toolsEnd int
	hasScope bool // a member cacheScope came before err
	scopeAt  int  // its value, text[scopeAt:scopeEnd]
	scopeEnd int
	toolsErr string // the first problem with the tools (not an array, a tool not readable), or ""
	first, n int    // the tools read before toolsErr are listIndex.tools[first:first+n]
}

// toolIndex is one tool of a tools array.
type toolIndex struct {
	start, end int    // its text
	name       string // its decoded name
	adjacent   bool   // it follows the previous tool after a comma alone (runs are copied at once)
	kept       bool   // f.Allow's answer, set by RewriteToolLists
}

// toolScan reads a body once.
type toolScan struct {
	textScan
	listIndex
}

// scan validates the body and indexes it. It returns false when the body is not one JSON
// value nested no deeper than MaxDepth (jsontext.Validate then says which).
func (t *toolScan) scan() bool {
	i := skipSpaceString(t.s, 0)
	var end int
	switch t.peek(i) {
	case '{':
		t.msgs = append(t.msgs, msgIndex{})
		end = t.message(i, 0, len(t.msgs)-1)
	case '[':
		end = t.batch(i)
	default:
		end = validValueEnd(t.b, i, 0)
	}
	return end >= 0 && skipSpaceString(t.s, end) == len(t.b)
}

// batch reads the array at i: its elements are messages.
func (t *toolScan) batch(i int) int {
	i, end, ok := t.open(i, 0, ']')
	for ok && i >= 0 {
		t.msgs = append(t.msgs, msgIndex{})
		if t.peek(i) == '{' {
			end = t.message(i, 1, len(t.msgs)-1)
		} else {
			t.msgs[len(t.msgs)-1].notObject = true
			end = validValueEnd(t.b, i, 1)
		}
		if end < 0 {
			return -1
		}
		i, end, ok = t.next(end, ']')
	}
	if !ok {
		return -1
	}
	return end
}

// message reads the object at i, within depth containers, into t.msgs[k]: the raw values of
// messageFields; the first duplicated member of messageFields, or member named like one but
// for case, is its problem (other members may repeat, as in readMembers).
func (t *toolScan) message(i, depth, k int) int {
	i, end, ok := t.open(i, depth, '}')
	for ok && i >= 0 {
		rawKey, at := t.key(i)
		if at < 0 {
			return -1
		}
		m := &t.msgs[k]
		field := -1
		if m.err == "" {
			key := decodeString(rawKey)
			if field = slices.Index(messageFields[:], key); field < 0 {
				for _, name := range messageFields {
					if strings.EqualFold(key, name) {
						m.err = "member name differs from " + name + " only by case"
						break
					}
				}
			} else if m.v[field] != "" {
				m.err = "duplicate member " + messageFields[field]
				field = -1
			}
		}
		if field == fResult && t.peek(at) == '{' {
			end = t.result(at, depth+1, &m.res)
		} else {
			end = validValueEnd(t.b, at, depth+1)
		}
		if end < 0 {
			return -1
		}
		if field >= 0 {
			m.v[field] = t.s[at:end]
			if field == fResult {
				m.resultAt = at
			}
		}
		i, end, ok = t.next(end, '}')
	}
	if !ok {
		return -1
	}
	return end
}

// result reads the result object at i, within depth containers: its members must all be
// distinct; tools and cacheScope are found, members named like them but for case refused.
func (t *toolScan) result(i, depth int, r *resultIndex) int {
	var seen keySet
	r.first = len(t.tools)
	i, end, ok := t.open(i, depth, '}')
	for ok && i >= 0 {
		rawKey, at := t.key(i)
		if at < 0 {
			return -1
		}
		end = -2 // not read yet
		if r.err == "" {
			key := decodeString(rawKey)
			switch {
			case !seen.add(key):
				r.err = "duplicate member result." + quoteKey(key)
			case key == "tools":
				r.hasTools, r.toolsAt = true, at
				end = t.toolArray(at, depth+1, r)
				r.toolsEnd = end
			case key == "cacheScope":
				r.hasScope, r.scopeAt = true, at
				end = validValueEnd(t.b, at, depth+1)
				r.scopeEnd = end
			case strings.EqualFold(key, "tools") || strings.EqualFold(key, "cacheScope"):
				r.err = "member name differs from result." + quoteKey(key) + " only by case"
			}
		}
		if end == -2 {
			end = validValueEnd(t.b, at, depth+1)
		}
		if end < 0 {
			return -1
		}
		i, end, ok = t.next(end, '}')
	}
	if !ok {
		return -1
	}
	r.end = end
	return end
}

// toolArray reads the tools value at i, within depth containers: an array whose tools are
// indexed up to the first that cannot be read (its problem is r.toolsErr).
func (t *toolScan) toolArray(i, depth int, r *resultIndex) int {
	if t.peek(i) != '[' {
		r.toolsErr = "result.tools is not an array"
		return validValueEnd(t.b, i, depth)
	}
	prev := -2 // where the previous tool ended
	i, end, ok := t.open(i, depth, ']')
	for ok && i >= 0 {
		switch {
		case r.toolsErr != "":
			end = validValueEnd(t.b, i, depth+1)
		case t.peek(i) != '{':
			r.toolsErr = "a tool is not an object"
			end = validValueEnd(t.b, i, depth+1)
		default:
			tl := toolIndex{start: i, adjacent: i == prev+1}
			end = t.tool(i, depth+1, &tl, r)
			if r.toolsErr == "" {
				t.tools = append(t.tools, tl)
				r.n++
			}
		}
		if end < 0 {
			return -1
		}
		prev = end
		i, end, ok = t.next(end, ']')
	}
	if !ok {
		return -1
	}
	return end
}

// tool reads the tool object at i, within depth containers: its members must all be distinct,
// its member name a non-empty string of clean text, and no member be named like it but for
// case. Its problem goes to r.toolsErr.
func (t *toolScan) tool(i, depth int, tl *toolIndex, r *resultIndex) int {
	var seen keySet
	i, end, ok := t.open(i, depth, '}')
	for ok && i >= 0 {
		rawKey, at := t.key(i)
		if at < 0 {
			return -1
		}
		if end = validValueEnd(t.b, at, depth+1); end < 0 {
			return -1
		}
		if r.toolsErr == "" {
			key := decodeString(rawKey)
			switch {
			case !seen.add(key):
				r.toolsErr = "duplicate member tools[]." + quoteKey(key)
			case key == "name":
				switch v := t.s[at:end]; {
				case !isString(v):
					r.toolsErr = "tools[].name is not a string"
				default:
					tl.name = decodeString(v)
					if tl.name == "" || !cleanText(tl.name) {
						r.toolsErr = "tools[].name is empty or not clean text"
					}
				}
			case strings.EqualFold(key, "name"):
				r.toolsErr = "member name differs from tools[].name only by case"
			}
		}
		i, end, ok = t.next(end, '}')
	}
	if !ok {
		return -1
	}
	if r.toolsErr == "" && tl.name == "" {
		r.toolsErr = "a tool has no name"
	}
	tl.end = end
	return end
}
