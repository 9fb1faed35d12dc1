package jsontext

import (
	"iter"
	"math"
	"strconv"
	"strings"
)

// Kind is the kind of a [Value].
type Kind uint8

// Kinds of values.
const (
	Missing Kind = iota // no value: a member or an element that is not there
	Null
	False
	True
	Number
	String
	Object
	Array
)

// Value is one JSON value in text that [Validate] accepted: its raw text without the
// whitespace around it, or nothing ([Missing]). Its methods read that text as gjson's Result
// does (FuzzValue_MatchesGJSON); on text that is not valid JSON their results are
// meaningless, though they never panic.
type Value struct{ raw string }

// Parse returns the value that text, which [Validate] accepted, holds.
func Parse(text string) Value {
	i := skipSpaceString(text, 0)
	return Value{text[i:valueEnd(text, i)]}
}

// Raw returns the text of v ("" if it is missing).
func (v Value) Raw() string { return v.raw }

// Exists reports whether v is a value, null included.
func (v Value) Exists() bool { return v.raw != "" }

// Kind returns the kind of v.
func (v Value) Kind() Kind {
	if v.raw == "" {
		return Missing
	}
	switch v.raw[0] {
	case '{':
		return Object
	case '[':
		return Array
	case '"':
		return String
	case 't':
		return True
	case 'f':
		return False
	case 'n':
		return Null
	}
	return Number
}

// Get returns the first member of v named name (after decoding escapes in the member names),
// or a missing value if v is not an object or has no such member. Unlike gjson's Get, name
// is a name, not a path.
func (v Value) Get(name string) Value {
	for k, val := range v.Members() {
		if k.String() == name {
			return val
		}
	}
	return Value{}
}

// Members yields the names (string values) and values of the members of v in order,
// duplicates included; nothing if v is not an object.
func (v Value) Members() iter.Seq2[Value, Value] {
	return func(yield func(Value, Value) bool) {
		if v.Kind() != Object {
			return
		}
		s := v.raw
		for i := skipSpaceString(s, 1); i < len(s) && s[i] == '"'; {
			kEnd := valueEnd(s, i)
			key := Value{s[i:kEnd]}
			i = skipSpaceString(s, kEnd)
			if i == len(s) || s[i] != ':' {
				return
			}
			i = skipSpaceString(s, i+1)
			vEnd := valueEnd(s, i)
			if !yield(key, Value{s[i:vEnd]}) {
				return
			}
			i = skipSpaceString(s, vEnd)
			if i == len(s) || s[i] != ',' {
				return
			}
			i = skipSpaceString(s, i+1)
		}
	}
}

// Elements yields the elements of v in order; nothing if v is not an array.
func (v Value) Elements() iter.Seq[Value] {
	return func(yield func(Value) bool) {
		if v.Kind() != Array {
			return
		}
		s := v.raw
		for i := skipSpaceString(s, 1); i < len(s) && s[i] != ']'; {
			end := valueEnd(s, i)
			if end == i || !yield(Value{s[i:end]}) {
				return
			}
			i = skipSpaceString(s, end)
			if i == len(s) || s[i] != ',' {
				return
			}
			i = skipSpaceString(s, i+1)
		}
	}
}

// Array returns the elements of v if it is an array, nothing if it is null or missing, and
// v alone otherwise, as gjson's Result.Array does.
func (v Value) Array() []Value {
	switch v.Kind() {
	case Missing, Null:
		return nil
	case Array:
		var out []Value
		for e := range v.Elements() {
			out = append(out, e)
		}
		return out
	}
	return []Value{v}
}

// String returns v as gjson's Result.String does: a string's decoded content ([Unquote]),
// an object's or array's raw text, "true", "false", "" for null or a missing value, and a
// number's text if it is an integer of digits only, otherwise its float64 value in decimal
// without exponent (1e3 is "1000", 1e400 "+Inf").
func (v Value) String() string {
	switch v.Kind() {
	case String:
		return Unquote(v.raw)
	case Object, Array:
		return v.raw
	case True:
		return "true"
	case False:
		return "false"
	case Number:
		digits := strings.TrimPrefix(v.raw, "-")
		for i := 0; i < len(digits); i++ {
			if !isDigit(digits[i]) {
				return strconv.FormatFloat(v.float(), 'f', -1, 64)
			}
		}
		return v.raw
	}
	return ""
}

// Int returns v as gjson's Result.Int does: 1 for true; for a number, its value truncated
// toward zero if within ±(2⁵³-1), else its text read as an integer of digits only
// (saturating), else its value saturated to the int64 range; for a string, its content read
// the same way as a number's text (strconv.ParseFloat syntax), 0 if it is not one; 0
// otherwise.
func (v Value) Int() int64 {
	switch v.Kind() {
	case True:
		return 1
	case String:
		s := v.String()
		if n, ok := parseInt(s); ok {
			return n
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return floatToInt(f)
		}
	case Number:
		f := v.float()
		const maxSafe = 1<<53 - 1
		if f >= -maxSafe && f <= maxSafe {
			return int64(f)
		}
		if n, ok := parseInt(v.raw); ok {
			return n
		}
		return floatToInt(f)
	}
	return 0
}

// float returns the value of a number (±Inf when out of range).
func (v Value) float() float64 {
	f, _ := strconv.ParseFloat(v.raw, 64)
	return f
}

// floatToInt converts f, saturating at the ends of the int64 range.
func floatToInt(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f < math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// parseInt reads s, an optional '-' and at least one digit and nothing else, as an integer,
// saturating at the ends of the int64 range. Its overflow test is gjson's: a step of the
// unsigned accumulation that wraps around without getting smaller goes unnoticed, so some
// values beyond 2⁶⁴ read as others (kept, so that readings do not change).
func parseInt(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var n uint64
	overflow := false
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		if overflow {
			continue
		}
		next := n*10 + uint64(s[i]-'0')
		if next < n {
			overflow = true
			n = math.MaxUint64
			continue
		}
		n = next
	}
	switch {
	case neg && n > 1<<63:
		return math.MinInt64, true
	case neg:
		return -int64(n), true
	case n > math.MaxInt64:
		return math.MaxInt64, true
	}
	return int64(n), true
}

// valueEnd returns the index after the value that starts at s[i] in valid JSON text (i if
// there is none).
func valueEnd(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		return stringEnd(s, i+1)
	case '{', '[':
		depth := 0
		for ; i < len(s); i++ {
			switch s[i] {
			case '"':
				i = stringEnd(s, i+1) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(s)
	}
	for j := i; j < len(s); j++ {
		switch s[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
	}
	return len(s)
}

// stringEnd returns the index after the closing quote of the string whose content starts
// at s[i] (len(s) if there is none).
func stringEnd(s string, i int) int {
	for i < len(s) {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			return len(s)
		}
		i += q + 1
		backslashes := 0
		for j := i - 2; j >= 0 && s[j] == '\\'; j-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return i
		}
	}
	return len(s)
}

func skipSpaceString(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}
