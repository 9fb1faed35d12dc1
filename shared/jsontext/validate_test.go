package jsontext

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 10)
	long := strings.Repeat("abcdefgh", 5)
	tests := []struct {
		body string
		want Verdict
	}{
		{`0`, Valid},
		{` -0.5e+10 `, Valid},
		{`1E-2`, Valid},
		{`"x"`, Valid},
		{"\t\r\n true \n", Valid},
		{`false`, Valid},
		{`null`, Valid},
		{`[]`, Valid},
		{`[ ]`, Valid},
		{`{}`, Valid},
		{`{ }`, Valid},
		{`{"a":[1,{"b":null}],"c":"\u00e9\n\"\\\/\b\f\r\t"}`, Valid},
		{`["` + long + `\"` + long + `\\` + long + `"]`, Valid},
		{`"` + long + "\xff\xfe" + long + `"`, Valid}, // UTF-8 is the caller's business
		{`[[[[[]]]]]`, Valid},
		{`{"a":{"b":{"c":{"d":{}}}}}`, Valid},
		{`["` + deep + `"]`, Valid},
		{`["\"` + deep + `"]`, Valid},
		{`[[[[[[]]]]]]`, TooDeep},
		{`{"a":{"b":{"c":{"d":{"e":{"f":{}}}}}}}`, TooDeep},
		{`["\\",[[[[[]]]]]]`, TooDeep},
		{``, Invalid},
		{` `, Invalid},
		{`[`, Invalid},
		{`]`, Invalid},
		{`[1,]`, Invalid},
		{`[,1]`, Invalid},
		{`[1 2]`, Invalid},
		{`[1}`, Invalid},
		{`{"a"}`, Invalid},
		{`{"a":}`, Invalid},
		{`{"a":1,}`, Invalid},
		{`{"a":1 "b":2}`, Invalid},
		{`{,}`, Invalid},
		{`{1:2}`, Invalid},
		{`{"a":1]`, Invalid},
		{`{"a":1}}`, Invalid},
		{`{"a":1} x`, Invalid},
		{`01`, Invalid},
		{`1.`, Invalid},
		{`.5`, Invalid},
		{`-`, Invalid},
		{`+1`, Invalid},
		{`1e`, Invalid},
		{`1e+`, Invalid},
		{`tru`, Invalid},
		{`nul`, Invalid},
		{`True`, Invalid},
		{`"abc`, Invalid},
		{`"` + long, Invalid},
		{`"\`, Invalid},
		{`"\q"`, Invalid},
		{`"\u12g4"`, Invalid},
		{`"\u12"`, Invalid},
		{"\"a\x01b\"", Invalid},
		{"\"" + long + "\x1f" + long + "\"", Invalid},
		{"\"tab\there\"", Invalid},
		{"'x'", Invalid},
		{"\ufeff{}", Invalid},
	}
	for _, tt := range tests {
		if got := Validate([]byte(tt.body), 5); got != tt.want {
			t.Errorf("Validate(%q) = %d, want %d", tt.body, got, tt.want)
		}
	}
}

// FuzzValidate checks Validate against gjson.ValidBytes, with the nesting depth of valid
// texts measured separately. Seeds: testdata/fuzz/FuzzValidate.
func FuzzValidate(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		const max = 5
		got := Validate(body, max)
		switch {
		case !gjson.ValidBytes(body):
			if got == Valid {
				t.Fatalf("Validate accepted %q, which gjson refuses", body)
			}
		case nesting(body) > max:
			if got != TooDeep {
				t.Fatalf("Validate(%q) = %d, want TooDeep", body, got)
			}
		case got != Valid:
			t.Fatalf("Validate refused %q (%d), which gjson accepts", body, got)
		}
	})
}

// nesting returns the deepest nesting of arrays and objects in valid JSON.
func nesting(body []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// ValidateRecording gives Validate's verdict and records the string values of LongString
// bytes or more, the first eight, where they are.
func TestValidateRecording(t *testing.T) {
	t.Parallel()
	long := `"` + strings.Repeat("a", LongString-4) + `\"` + `"` // LongString bytes with its quotes
	short := `"` + strings.Repeat("a", LongString-3) + `"`       // one byte shorter
	many := "[" + strings.Repeat(long+",", 9) + long + "]"
	for _, tt := range []struct {
		name, body string
		starts     []int
	}{
		{"value", `{"k":` + long + `}`, []int{5}},
		{"key not recorded", `{` + long + `:1}`, nil},
		{"one byte short", `[` + short + `]`, nil},
		{"first eight", many, []int{1, 1 + 65, 1 + 2*65, 1 + 3*65, 1 + 4*65, 1 + 5*65, 1 + 6*65, 1 + 7*65}},
		{"invalid", `[` + long + `,]`, nil},
	} {
		var ls LongStrings
		ls.N = 3 // reset by ValidateRecording
		v := ValidateRecording([]byte(tt.body), MaxDepth, &ls)
		if want := Validate([]byte(tt.body), MaxDepth); v != want {
			t.Fatalf("%s: verdict %v, Validate %v", tt.name, v, want)
		}
		if v != Valid {
			continue
		}
		if ls.N != len(tt.starts) {
			t.Fatalf("%s: %d recorded, want %d", tt.name, ls.N, len(tt.starts))
		}
		for i, start := range tt.starts {
			if ls.Start[i] != start || ls.End[i] != start+len(long) {
				t.Fatalf("%s: record %d = %d..%d, want %d..%d", tt.name, i, ls.Start[i], ls.End[i], start, start+len(long))
			}
		}
	}
}
