package jsontext

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestAppendString(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain text 123", `"plain text 123"`},
		{`a"b\c/d`, `"a\"b\\c/d"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x1f\x7f", `"\u0000\u0001\u001f` + "\x7f" + `"`},
		{"<a href='x'>&amp;</a>", `"\u003ca href='x'\u003e\u0026amp;\u003c/a\u003e"`},
		{"caf\u00e9 \U0001F600", "\"caf\u00e9 \U0001F600\""},
		{"line\u2028para\u2029", `"line\u2028para\u2029"`},
		{"bad\xff\xfe utf8 \xe2\x82", "\"bad\uFFFD\uFFFD utf8 \uFFFD\uFFFD\""},
		{"\uFFFD kept", "\"\uFFFD kept\""},
		{"ok then \n", `"ok then \n"`},
	}
	for _, tt := range tests {
		got := string(AppendString([]byte("x"), tt.in))
		if got != "x"+tt.want {
			t.Errorf("AppendString(%q) = %s, want x%s", tt.in, got, tt.want)
		}
		if oracle := string(gjson.AppendJSONString([]byte("x"), tt.in)); got != oracle {
			t.Errorf("AppendString(%q) = %s, gjson writes %s", tt.in, got, oracle)
		}
	}
}

func TestUnquote(t *testing.T) {
	t.Parallel()
	tests := []struct{ raw, want string }{
		{`""`, ""},
		{`"abc"`, "abc"},
		{`"a\"b\\c\/d\b\f\n\r\t"`, "a\"b\\c/d\b\f\n\r\t"},
		{`"tools\u002fcall"`, "tools/call"},
		{`"\u00e9\u20AC"`, "\u00e9\u20ac"},
		{`"\ud83d\ude00"`, "\U0001F600"},
		{`"\ud800"`, "\uFFFD"},         // lone high surrogate
		{`"\udc00x"`, "\uFFFDx"},       // lone low surrogate
		{`"\ud800\u0041B"`, "\uFFFDB"}, // a bad pair takes the second escape with it
		{`"\ud800\\"`, "\uFFFD\\"},     // not a \u escape after it
		{"\"\xff\\n\"", "\xff\n"},      // invalid UTF-8 is the caller's business
		{`"`, ""},
	}
	for _, tt := range tests {
		if got := Unquote(tt.raw); got != tt.want {
			t.Errorf("Unquote(%s) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}

func TestUnescape_BrokenText(t *testing.T) {
	t.Parallel()
	// What gjson does with text that is not a valid string's content, which
	// shared/authlog's redaction may decode.
	tests := []struct{ in, want string }{
		{`ab\qcd`, "ab"},
		{"ab\x01\\ncd", "ab"},
		{`ab\u12`, "ab"},
		{`ab\u12g4cd`, "ab\x00cd"},
		{`\ud800\u12g4`, "\uFFFD"},
	}
	for _, tt := range tests {
		if got := Unescape(tt.in); got != tt.want {
			t.Errorf("Unescape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzAppendString_MatchesGJSON checks AppendString against gjson.AppendJSONString, and
// that its output decodes back to s when s is valid UTF-8. Seeds:
// testdata/fuzz/FuzzAppendString_MatchesGJSON and f.Add.
func FuzzAppendString_MatchesGJSON(f *testing.F) {
	for _, s := range []string{"", "abc", "<&>", "\u2028\u2029", "\xff", "\x00\x1f\"\\", "é\U0001F600"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		if want := gjson.AppendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, gjson writes %s", s, got, want)
		}
		if !ValidString(string(got)) {
			t.Fatalf("AppendString(%q) = %s, not JSON", s, got)
		}
	})
}

// FuzzUnescape_MatchesGJSON checks Unescape against the content gjson decodes from the
// same text in quotes, for any text without an unescaped quote or an unpaired final
// backslash, and Unquote likewise for valid strings. Seeds:
// testdata/fuzz/FuzzUnescape_MatchesGJSON and f.Add.
func FuzzUnescape_MatchesGJSON(f *testing.F) {
	for _, s := range []string{`abc`, `a\"b`, `\u0041`, `\ud83d\ude00`, `\ud800\u0041`, `\ud800`, `\x`, "\x01\\n", `\u12g4`, `\\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !stringContent(s) {
			return
		}
		want := gjson.Parse(`"` + s + `"`).Str
		if got := Unescape(s); got != want {
			t.Fatalf("Unescape(%q) = %q, gjson decodes %q", s, got, want)
		}
		if raw := `"` + s + `"`; ValidString(raw) {
			if got := Unquote(raw); got != want {
				t.Fatalf("Unquote(%s) = %q, gjson decodes %q", raw, got, want)
			}
		}
	})
}

// stringContent reports whether s could stand between a string's quotes: no unescaped
// quote, no unpaired final backslash.
func stringContent(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i++; i == len(s) {
				return false
			}
		case '"':
			return false
		}
	}
	return true
}
