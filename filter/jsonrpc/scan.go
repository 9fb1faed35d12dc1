package jsonrpc

import (
	"strings"

	"github.com/mcpmesh/gateway/shared/jsontext"
)

// Readers of JSON text that validate has accepted. They find the members of an object as
// raw text, skipping nested values without looking inside them
// beyond their strings. They assume valid input but stay within bounds whatever the text:
// on text that is not valid JSON they may return garbage, never panic.

// members reads the members of an object: s starts with its opening brace and may go on
// after the object.
type members struct {
	s   string
	i   int // where the reader is: before a member, or at the current member's value
	end int // after the last member: the length of the object's text
}

func newMembers(s string) members { return members{s: s, i: 1} }

// key moves to the next member and returns its raw key (with the quotes), leaving the reader
// at the member's value; after the last member it returns "" and sets end.
func (m *members) key() string {
	i := skipSpaceString(m.s, m.i)
	if i < len(m.s) && m.s[i] == ',' {
		i = skipSpaceString(m.s, i+1)
	}
	if i >= len(m.s) || m.s[i] != '"' {
		m.end = min(i+1, len(m.s)) // past the closing brace
		m.i = m.end
		return ""
	}
	keyEnd := skipStringContent(m.s, i+1)
	colon := skipSpaceString(m.s, keyEnd)
	m.i = skipSpaceString(m.s, min(colon+1, len(m.s)))
	return m.s[i:keyEnd]
}

// rest returns the text from the current member's value on.
func (m *members) rest() string { return m.s[m.i:] }

// skip moves the reader n bytes on, past the current member's value.
func (m *members) skip(n int) { m.i = min(m.i+n, len(m.s)) }

// value returns the raw value of the current member and moves past it.
func (m *members) value() string { return m.valueIn(nil) }

// valueIn is value for a reader whose text l knows the long strings of (m.s a suffix of it).
func (m *members) valueIn(l *longStrings) string {
	end := skipValue(m.s, m.i, l)
	v := m.s[m.i:end]
	m.i = end
	return v
}

// skipValue returns the index just after the value that starts at s[i]. l, when not nil,
// holds the long strings of the text s is a suffix of.
func skipValue(s string, i int, l *longStrings) int {
	if i >= len(s) {
		return len(s)
	}
	switch s[i] {
	case '"':
		if end := l.end(s, i); end >= 0 {
			return end
		}
		return skipStringContent(s, i+1)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				if end := l.end(s, i); end >= 0 {
					i = end
				} else {
					i = skipStringContent(s, i+1)
				}
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

// longStrings lets the readers of one validated text jump over the long strings that
// jsontext.ValidateRecording found in it, rather than read them a second time (in the wasm
// filter a read costs about six instructions a byte). Readers go through the text from left
// to right; a string met again after a step back is read as any other.
type longStrings struct {
	rec     jsontext.LongStrings // offsets in the validated body
	first   int                  // where the text starts in the body
	textLen int                  // the text's length: its suffix s starts at textLen-len(s)
	next    int                  // the first record not passed yet
}

// end returns the index after the string whose opening quote is s[i], s a suffix of the text,
// if it is a recorded long string, or -1.
func (l *longStrings) end(s string, i int) int {
	if l == nil {
		return -1
	}
	at := l.first + l.textLen - len(s) + i // in the body
	for l.next < l.rec.N && l.rec.Start[l.next] < at {
		l.next++
	}
	if l.next < l.rec.N && l.rec.Start[l.next] == at {
		end := i + l.rec.End[l.next] - at
		l.next++
		return end
	}
	return -1
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
// escapes, nearly all of them, are their own content; the others are decoded by
// jsontext.Unquote, the way every conforming decoder does.
func decodeString(raw string) string { return jsontext.Unquote(raw) }
