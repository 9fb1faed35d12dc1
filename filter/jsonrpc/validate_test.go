package jsonrpc

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
		want int
	}{
		{`0`, valid},
		{` -0.5e+10 `, valid},
		{`1E-2`, valid},
		{`"x"`, valid},
		{"\t\r\n true \n", valid},
		{`false`, valid},
		{`null`, valid},
		{`[]`, valid},
		{`[ ]`, valid},
		{`{}`, valid},
		{`{ }`, valid},
		{`{"a":[1,{"b":null}],"c":"\u00e9\n\"\\\/\b\f\r\t"}`, valid},
		{`["` + long + `\"` + long + `\\` + long + `"]`, valid},
		{`"` + long + "\xff\xfe" + long + `"`, valid}, // UTF-8 is the caller's business
		{`[[[[[]]]]]`, valid},
		{`{"a":{"b":{"c":{"d":{}}}}}`, valid},
		{`["` + deep + `"]`, valid},
		{`["\"` + deep + `"]`, valid},
		{`[[[[[[]]]]]]`, tooDeep},
		{`{"a":{"b":{"c":{"d":{"e":{"f":{}}}}}}}`, tooDeep},
		{`["\\",[[[[[]]]]]]`, tooDeep},
		{``, invalidJSON},
		{` `, invalidJSON},
		{`[`, invalidJSON},
		{`]`, invalidJSON},
		{`[1,]`, invalidJSON},
		{`[,1]`, invalidJSON},
		{`[1 2]`, invalidJSON},
		{`[1}`, invalidJSON},
		{`{"a"}`, invalidJSON},
		{`{"a":}`, invalidJSON},
		{`{"a":1,}`, invalidJSON},
		{`{"a":1 "b":2}`, invalidJSON},
		{`{,}`, invalidJSON},
		{`{1:2}`, invalidJSON},
		{`{"a":1]`, invalidJSON},
		{`{"a":1}}`, invalidJSON},
		{`{"a":1} x`, invalidJSON},
		{`01`, invalidJSON},
		{`1.`, invalidJSON},
		{`.5`, invalidJSON},
		{`-`, invalidJSON},
		{`+1`, invalidJSON},
		{`1e`, invalidJSON},
		{`1e+`, invalidJSON},
		{`tru`, invalidJSON},
		{`nul`, invalidJSON},
		{`True`, invalidJSON},
		{`"abc`, invalidJSON},
		{`"` + long, invalidJSON},
		{`"\`, invalidJSON},
		{`"\q"`, invalidJSON},
		{`"\u12g4"`, invalidJSON},
		{`"\u12"`, invalidJSON},
		{"\"a\x01b\"", invalidJSON},
		{"\"" + long + "\x1f" + long + "\"", invalidJSON},
		{"\"tab\there\"", invalidJSON},
		{"'x'", invalidJSON},
		{"\ufeff{}", invalidJSON},
	}
	for _, tt := range tests {
		if got := validate([]byte(tt.body), 5); got != tt.want {
			t.Errorf("validate(%q) = %d, want %d", tt.body, got, tt.want)
		}
	}
}

// FuzzValidate checks validate against gjson.ValidBytes, with the nesting depth of valid
// texts measured separately. Seeds: testdata/fuzz/FuzzValidate.
func FuzzValidate(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		const max = 5
		got := validate(body, max)
		switch {
		case !gjson.ValidBytes(body):
			if got == valid {
				t.Fatalf("validate accepted %q, which gjson refuses", body)
			}
		case nesting(body) > max:
			if got != tooDeep {
				t.Fatalf("validate(%q) = %d, want tooDeep", body, got)
			}
		case got != valid:
			t.Fatalf("validate refused %q (%d), which gjson accepts", body, got)
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

func BenchmarkValidate(b *testing.B) {
	body := toolsCallBody(1024)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if validate(body, MaxDepth) != valid {
			b.Fatal("invalid")
		}
	}
}
