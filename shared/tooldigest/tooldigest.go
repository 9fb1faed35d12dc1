// Package tooldigest defines the digest of an MCP tool definition that pinned tool lists
// compare (docs/tool-pinning.md), and the lock file that records them. It compiles for wasip1:
// the filter computes the same digest of every tool a pinned route's server lists.
//
// The digest of a tool is
//
//	"sha256:" + lowercase hex of SHA-256( JCS({name, description, inputSchema, annotations}) )
//
// where the object holds those of the four members the tool has (absent ones are left out,
// null ones kept), and JCS is the JSON Canonicalization Scheme of RFC 8785: members sorted by
// the UTF-16 code units of their names, no whitespace, strings with only the escapes JSON
// requires (\" \\ \b \f \n \r \t and \u00xx for other control characters, lowercase hex),
// numbers as ECMAScript writes them. Any RFC 8785 implementation computes it.
package tooldigest

import (
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcpmesh/gateway/shared/jsontext"
	"github.com/mcpmesh/gateway/shared/sha2"
)

// Members are the members of a tool definition the digest covers, in the order JCS sorts them.
var Members = []string{"annotations", "description", "inputSchema", "name"}

// Prefix starts every digest.
const Prefix = "sha256:"

// maxDepth bounds the nesting Canonical accepts.
const maxDepth = 200

// ErrInvalid is wrapped by the errors of this package: the text is not canonicalizable JSON
// (invalid, a duplicated member name, invalid UTF-8, a number out of range, nested too deep).
var ErrInvalid = errors.New("tooldigest: not canonicalizable JSON")

func invalid(why string) error { return errors.Join(ErrInvalid, errors.New(why)) }

// Digest returns the digest of the tool object tool (its JSON text as tools/list lists it).
func Digest(tool []byte) (string, error) {
	v, err := parse(tool)
	if err != nil {
		return "", err
	}
	if v.Kind() != jsontext.Object {
		return "", invalid("a tool is not an object")
	}
	var picked [4]jsontext.Value
	var has [4]bool
	for k, val := range v.Members() {
		name := k.String()
		i := slices.Index(Members, name)
		if i < 0 {
			continue
		}
		if has[i] {
			return "", invalid("duplicate member " + name)
		}
		picked[i], has[i] = val, true
	}
	out := []byte{'{'}
	first := true
	for i, name := range Members { // already in JCS order
		if !has[i] {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = appendString(out, name)
		out = append(out, ':')
		if out, err = appendValue(out, picked[i], 0); err != nil {
			return "", err
		}
	}
	out = append(out, '}')
	sum := sha2.Sum256(out)
	return Prefix + hex.EncodeToString(sum[:]), nil
}

// Canonical returns the JCS form (RFC 8785) of the JSON text b.
func Canonical(b []byte) ([]byte, error) {
	v, err := parse(b)
	if err != nil {
		return nil, err
	}
	return appendValue(nil, v, 0)
}

// parse validates b and returns its value. Text nested deeper than jsontext follows
// (jsontext.MaxDepth, far beyond maxDepth) is refused whole, even where the nesting lies in a
// member Digest leaves out.
func parse(b []byte) (jsontext.Value, error) {
	switch jsontext.Validate(b, jsontext.MaxDepth) {
	case jsontext.TooDeep:
		return jsontext.Value{}, invalid("nested deeper than " + strconv.Itoa(maxDepth))
	case jsontext.Invalid:
		return jsontext.Value{}, invalid("not JSON")
	}
	return jsontext.Parse(string(b)), nil
}

// members are an object's members, sorted by key with sort.Sort: the filter links sort's one
// copy of its algorithm, where a generic sort would add one per element type (about 25 KB of
// the module each).
type members []member

type member struct {
	key string
	val jsontext.Value
}

func (m members) Len() int           { return len(m) }
func (m members) Less(i, j int) bool { return compareUTF16(m[i].key, m[j].key) < 0 }
func (m members) Swap(i, j int)      { m[i], m[j] = m[j], m[i] }

func appendValue(dst []byte, v jsontext.Value, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, invalid("nested deeper than " + strconv.Itoa(maxDepth))
	}
	var err error
	switch v.Kind() {
	case jsontext.Object:
		var ms members
		for k, val := range v.Members() {
			if !validStringRaw(k.Raw()) {
				return nil, invalid("member name is not valid UTF-8")
			}
			ms = append(ms, member{k.String(), val})
		}
		sort.Sort(ms)
		dst = append(dst, '{')
		for i, m := range ms {
			if i > 0 {
				if ms[i-1].key == m.key {
					return nil, invalid("duplicate member name")
				}
				dst = append(dst, ',')
			}
			dst = appendString(dst, m.key)
			dst = append(dst, ':')
			if dst, err = appendValue(dst, m.val, depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case jsontext.Array:
		dst = append(dst, '[')
		i := 0
		for el := range v.Elements() {
			if i > 0 {
				dst = append(dst, ',')
			}
			i++
			if dst, err = appendValue(dst, el, depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case jsontext.String:
		if !validStringRaw(v.Raw()) {
			return nil, invalid("string is not valid UTF-8")
		}
		return appendString(dst, v.String()), nil
	case jsontext.Number:
		f, err := strconv.ParseFloat(v.Raw(), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, invalid("number out of range")
		}
		return append(dst, FormatNumber(f)...), nil
	case jsontext.True:
		return append(dst, "true"...), nil
	case jsontext.False:
		return append(dst, "false"...), nil
	case jsontext.Null:
		return append(dst, "null"...), nil
	}
	return nil, invalid("unknown value")
}

// validStringRaw reports whether the raw JSON string is valid UTF-8 and its \u escapes pair
// up (a lone surrogate is not a character).
func validStringRaw(raw string) bool {
	if !utf8.ValidString(raw) {
		return false
	}
	for i := 0; i+1 < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' || i+6 > len(raw) {
			i++
			continue
		}
		r, err := strconv.ParseUint(raw[i+2:i+6], 16, 16)
		if err != nil {
			return false
		}
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if i+12 > len(raw) || raw[i+6] != '\\' || raw[i+7] != 'u' {
				return false
			}
			lo, err := strconv.ParseUint(raw[i+8:i+12], 16, 16)
			if err != nil || lo < 0xDC00 || lo > 0xDFFF {
				return false
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return false
		default:
			i += 5
		}
	}
	return true
}

// compareUTF16 orders strings by their UTF-16 code units (RFC 8785 §3.2.3).
func compareUTF16(a, b string) int {
	ascii := true
	for i := 0; i < len(a) && ascii; i++ {
		ascii = a[i] < 0x80
	}
	for i := 0; i < len(b) && ascii; i++ {
		ascii = b[i] < 0x80
	}
	if ascii {
		return strings.Compare(a, b)
	}
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(ua, ub)
}

// appendString appends s as a JCS string.
func appendString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			dst = append(dst, '\\', '"')
		case c == '\\':
			dst = append(dst, '\\', '\\')
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// FormatNumber writes f as ECMAScript's Number.prototype.toString does (RFC 8785 §3.2.2.3):
// the shortest digits that read back as f, in plain notation for magnitudes from 1e-6 up to
// 1e21, in exponent notation otherwise; -0 is 0.
func FormatNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	neg := f < 0
	if neg {
		f = -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±xx
	mant, exp, _ := strings.Cut(e, "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	x, _ := strconv.Atoi(exp)
	n, k := x+1, len(digits) // f = 0.digits × 10^n
	var s string
	switch {
	case k <= n && n <= 21:
		s = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		s = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		s = "0." + strings.Repeat("0", -n) + digits
	default:
		sign := "+"
		if n-1 < 0 {
			sign = "-"
		}
		ex := n - 1
		if ex < 0 {
			ex = -ex
		}
		s = digits[:1]
		if k > 1 {
			s += "." + digits[1:]
		}
		s += "e" + sign + strconv.Itoa(ex)
	}
	if neg {
		return "-" + s
	}
	return s
}
