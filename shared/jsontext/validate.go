package jsontext

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// Verdict is the result of [Validate].
type Verdict int

// Verdicts of [Validate].
const (
	Valid   Verdict = iota // one JSON value, nested no deeper than allowed
	Invalid                // not JSON
	TooDeep                // nested deeper than allowed
)

// MaxDepth is the deepest nesting of objects and arrays [Validate] can follow: a larger
// maxDepth counts as MaxDepth.
const MaxDepth = 1000

// Validate checks in one pass that body is a single JSON value (RFC 8259) with optional
// whitespace around it, nested no deeper than maxDepth (at most [MaxDepth]). It accepts
// exactly the texts that gjson.ValidBytes accepts (FuzzValidate compares them), among those
// within the depth limit; like gjson it leaves UTF-8 to the caller. A body that is both too
// deep and invalid may be reported as either.
//
// It replaced gjson.ValidBytes plus a separate depth pass because in the wasm filter each
// pass over the body costs about ten nanoseconds a byte: this one is iterative (no call per
// value) and skips string content, most of a tools/call body, eight bytes at a time.
func Validate(body []byte, maxDepth int) Verdict { return validate(body, maxDepth, nil) }

// LongStrings is where [ValidateRecording] found the first string values of at least
// [LongString] bytes, in the order of the text: a reader of the validated text jumps over them
// instead of reading them a second time.
type LongStrings struct {
	N          int    // how many are recorded
	Start, End [8]int // offsets of each one's opening quote, and after its closing quote
}

// LongString is the length, quotes included, from which ValidateRecording records a string.
const LongString = 64

// ValidateRecording is Validate that also records in ls the long string values it finds
// (ls is reset first). Only a valid body's record means anything.
//
// Since filter/jsonrpc reads a request in one pass, its only user is the two-pass reader that
// jsonrpc's tests keep as an oracle.
func ValidateRecording(body []byte, maxDepth int, ls *LongStrings) Verdict {
	ls.N = 0
	return validate(body, maxDepth, ls)
}

func validate(body []byte, maxDepth int, ls *LongStrings) Verdict {
	// inArray has one bit per open container: set for an array, clear for an object.
	var inArray [MaxDepth/64 + 1]uint64
	if maxDepth > MaxDepth {
		maxDepth = MaxDepth
	}
	const (
		wantValue  = iota // a value starts here (after whitespace)
		wantKey           // an object member's key starts here (after whitespace)
		afterValue        // a value ended: a separator, a closing bracket or the end follow
	)
	depth, state := 0, wantValue
	i, n := 0, len(body)
	for {
		i = skipSpace(body, i)
		switch state {
		case wantValue:
			if i == n {
				return Invalid
			}
			state = afterValue
			switch c := body[i]; c {
			case '{', '[':
				if depth == maxDepth {
					return TooDeep
				}
				bit := uint64(1) << (depth % 64)
				if c == '[' {
					inArray[depth/64] |= bit
				} else {
					inArray[depth/64] &^= bit
				}
				depth++
				i = skipSpace(body, i+1)
				switch {
				case i < n && (c == '{' && body[i] == '}' || c == '[' && body[i] == ']'):
					depth-- // empty container
					i++
				case c == '{':
					state = wantKey
				default:
					state = wantValue
				}
				continue
			case '"':
				start := i
				i = skipString(body, i+1)
				if ls != nil && i-start >= LongString && ls.N < len(ls.Start) {
					ls.Start[ls.N], ls.End[ls.N] = start, i
					ls.N++
				}
			case 't':
				i = skipLiteral(body, i, "true")
			case 'f':
				i = skipLiteral(body, i, "false")
			case 'n':
				i = skipLiteral(body, i, "null")
			default:
				i = skipNumber(body, i)
			}
			if i < 0 {
				return Invalid
			}
		case wantKey:
			if i == n || body[i] != '"' {
				return Invalid
			}
			if i = skipString(body, i+1); i < 0 {
				return Invalid
			}
			if i = skipSpace(body, i); i == n || body[i] != ':' {
				return Invalid
			}
			i++
			state = wantValue
		case afterValue:
			if depth == 0 {
				if i != n {
					return Invalid
				}
				return Valid
			}
			if i == n {
				return Invalid
			}
			array := inArray[(depth-1)/64]&(1<<((depth-1)%64)) != 0
			switch c := body[i]; {
			case c == ',':
				i++
				if state = wantValue; !array {
					state = wantKey
				}
			case c == ']' && array, c == '}' && !array:
				i++
				depth--
			default:
				return Invalid
			}
		}
	}
}

// ValidString reports whether s is one JSON value nested no deeper than [MaxDepth]: what
// gjson.Valid reports for such text (deeper text, which gjson accepts, is refused).
func ValidString(s string) bool {
	// Validate only reads body; the conversion does not copy s.
	return Validate(unsafe.Slice(unsafe.StringData(s), len(s)), MaxDepth) == Valid
}

// The pieces of Validate, for a reader that validates a body while it reads it
// (filter/jsonrpc's tool-list scanner). Each returns the index just after what starts at b[i],
// or -1 where Validate would find the text invalid.

// StringEnd is the end of the string whose content starts at b[i], after its opening quote.
func StringEnd(b []byte, i int) int { return skipString(b, i) }

// ScalarEnd is the end of the literal (true, false, null) or number at b[i], i < len(b).
func ScalarEnd(b []byte, i int) int {
	switch b[i] {
	case 't':
		return skipLiteral(b, i, "true")
	case 'f':
		return skipLiteral(b, i, "false")
	case 'n':
		return skipLiteral(b, i, "null")
	}
	return skipNumber(b, i)
}

// SpaceEnd is the end of the JSON whitespace (possibly none) at b[i].
func SpaceEnd(b []byte, i int) int { return skipSpace(b, i) }

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipLiteral returns the index after lit at b[i:], or -1.
func skipLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// skipNumber returns the index after the number at b[i:] (RFC 8259: -?(0|[1-9][0-9]*)
// (\.[0-9]+)?([eE][+-]?[0-9]+)?), or -1.
func skipNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && isDigit(b[i]):
		i = skipDigits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i++; i == len(b) || !isDigit(b[i]) {
			return -1
		}
		i = skipDigits(b, i)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i == len(b) || !isDigit(b[i]) {
			return -1
		}
		i = skipDigits(b, i)
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func skipDigits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

// skipString returns the index after the closing quote of the string whose content starts
// at b[i], or -1 if it is unterminated, holds a raw control character or a bad escape.
func skipString(b []byte, i int) int {
	for i < len(b) {
		// Jump over ordinary bytes eight at a time, to the first one that needs a look; past
		// sixteen ordinary bytes, 32 at a time while it can (in the wasm filter each turn of a
		// loop costs about as much as the test of a word). Short strings, most keys and
		// names, and text with an escape every few bytes (code, prose with line breaks) never
		// pay for the longer test (BENCHMARKS.md, "All of it merged").
		if i+8 <= len(b) {
			m := stringSpecials(binary.LittleEndian.Uint64(b[i:]))
			if m == 0 {
				i += 8
				if i+8 > len(b) {
					continue
				}
				// The second word's mask, if it has a special byte, is used below as the
				// first's would be: no word is tested twice.
				if m = stringSpecials(binary.LittleEndian.Uint64(b[i:])); m == 0 {
					i += 8
					for i+32 <= len(b) {
						w := b[i : i+32]
						if stringSpecials(binary.LittleEndian.Uint64(w))|stringSpecials(binary.LittleEndian.Uint64(w[8:]))|
							stringSpecials(binary.LittleEndian.Uint64(w[16:]))|stringSpecials(binary.LittleEndian.Uint64(w[24:])) != 0 {
							break
						}
						i += 32
					}
					continue
				}
			}
			i += bits.TrailingZeros64(m) / 8
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 < len(b) && isShortEscape(b[i+1]) {
				i += 2 // the common case, without a call
				continue
			}
			if i = skipEscape(b, i+1); i < 0 {
				return -1
			}
			i++
		case c < 0x20:
			return -1
		default:
			i++ // an ordinary byte of the last seven
		}
	}
	return -1
}

// isShortEscape reports whether c, after a backslash, makes a two-byte escape sequence.
func isShortEscape(c byte) bool {
	return c == 'n' || c == '"' || c == '\\' || c == '/' || c == 't' || c == 'r' || c == 'b' || c == 'f'
}

// skipEscape checks the escape sequence after a backslash at b[i] and returns the index of
// its last byte, or -1.
func skipEscape(b []byte, i int) int {
	if i == len(b) {
		return -1
	}
	switch b[i] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i
	case 'u':
		if len(b)-i <= 4 {
			return -1
		}
		for _, h := range b[i+1 : i+5] {
			if !isHex(h) {
				return -1
			}
		}
		return i + 4
	}
	return -1
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// stringSpecials looks at the eight bytes packed little-endian in w, eight at a time. Its
// lowest set bit is the top bit of the first byte that is a quote, a backslash or a control
// character; it is zero when there is none. These are the classic word-at-a-time tests: for
// a byte x, (x - 1) &^ x has its top bit set when x is zero, and (x - 0x20) &^ x when x is
// below 0x20; a borrow may set higher bits too, but never lower ones.
func stringSpecials(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote := w ^ (ones * '"')
	backslash := w ^ (ones * '\\')
	control := (w - ones*0x20) &^ w
	return ((quote-ones)&^quote | (backslash-ones)&^backslash | control) & highs
}
