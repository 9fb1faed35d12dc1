package jsonrpc

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Readers of JSON text that validate has accepted. They find the members of an object and
// the elements of an array as raw text, skipping nested values without looking inside them
// beyond their strings. They assume valid input but stay within bounds whatever the text:
// on text that is not valid JSON they may return garbage, never panic.

// members iterates over the members of a raw JSON object.
type members struct {
	s string
	i int // where the next member (or the closing brace) starts, after a separator
}

func newMembers(obj string) members { return members{s: obj, i: 1} }

// next returns the raw key (with its quotes) and the raw value of the next member, or two
// empty strings after the last one.
func (m *members) next() (rawKey, value string) {
	i := skipSpaceString(m.s, m.i)
	if i < len(m.s) && m.s[i] == ',' {
		i = skipSpaceString(m.s, i+1)
	}
	if i >= len(m.s) || m.s[i] != '"' {
		m.i = len(m.s)
		return "", ""
	}
	keyEnd := skipValue(m.s, i)
	rawKey = m.s[i:keyEnd]
	i = skipSpaceString(m.s, keyEnd) + 1 // past the colon
	i = skipSpaceString(m.s, i)
	end := skipValue(m.s, i)
	m.i = end
	return rawKey, m.s[i:end]
}

// elements iterates over the elements of a raw JSON array.
type elements struct {
	s string
	i int
}

func newElements(array string) elements { return elements{s: array, i: 1} }

// next returns the raw text of the next element, or "" after the last one.
func (e *elements) next() string {
	i := skipSpaceString(e.s, e.i)
	if i < len(e.s) && e.s[i] == ',' {
		i = skipSpaceString(e.s, i+1)
	}
	if i >= len(e.s) || e.s[i] == ']' {
		e.i = len(e.s)
		return ""
	}
	end := skipValue(e.s, i)
	e.i = end
	return e.s[i:end]
}

// skipValue returns the index just after the value that starts at s[i].
func skipValue(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	switch s[i] {
	case '"':
		return skipStringContent(s, i+1)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				i = skipStringContent(s, i+1)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(s)
	}
	// A number, true, false or null: up to the next separator, bracket or space.
	for i < len(s) {
		switch s[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// skipStringContent returns the index just after the closing quote of the string whose
// content starts at s[i]. validate has checked the string, so it jumps from quote to quote
// (strings.IndexByte is assembly, several times faster in wasm than a loop in Go) and looks
// only at the backslashes right before each: an odd number of them escapes the quote.
func skipStringContent(s string, i int) int {
	start := i
	for {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			return len(s)
		}
		i += q
		backslashes := 0
		for j := i - 1; j >= start && s[j] == '\\'; j-- {
			backslashes++
		}
		i++
		if backslashes%2 == 0 {
			return i
		}
	}
}

func skipSpaceString(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// decodeString returns the value of a raw JSON string (with its quotes). Strings without
// escapes, nearly all of them, are their own content; the others are decoded by gjson, the
// way every conforming decoder does.
func decodeString(raw string) string {
	if len(raw) < 2 {
		return ""
	}
	content := raw[1 : len(raw)-1]
	for i := 0; i < len(content); i++ {
		if content[i] == '\\' {
			return gjson.Parse(raw).Str
		}
	}
	return content
}
