package jsontext

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string to dst and returns the extended slice. The output
// is byte for byte what gjson.AppendJSONString writes (FuzzAppendString_MatchesGJSON):
//
//   - '"' and '\\' as \" and \\; \b \f \n \r \t as such; other control characters as \u00xx;
//   - '<', '>' and '&' as \u003c, \u003e and \u0026, so that the text is safe inside HTML;
//   - U+2028 and U+2029 as \u2028 and \u2029 (JavaScript once took them for line ends);
//   - each byte that is not part of valid UTF-8 as U+FFFD;
//   - everything else as it is.
//
// Printable ASCII with nothing to escape, nearly every string the gateway writes, is copied
// at once.
func AppendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return appendEscaped(append(append(dst, '"'), s[:i]...), s[i:])
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendEscaped appends s escaped as AppendString describes, and the closing quote.
func appendEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && n == 1:
				dst = append(dst, "\uFFFD"...)
			case r == '\u2028' || r == '\u2029':
				dst = append(dst, `\u202`...)
				dst = append(dst, hexDigits[r&0xf])
			default:
				dst = append(dst, s[i:i+n]...)
			}
			i += n
			continue
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
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
		case c < ' ' || c == '<' || c == '>' || c == '&':
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			dst = append(dst, c)
		}
		i++
	}
	return append(dst, '"')
}

// Unquote returns the value of raw, the text of one JSON string with its quotes as
// [Validate] accepts it ("" if raw is shorter than two bytes), decoded by [Unescape].
func Unquote(raw string) string {
	if len(raw) < 2 {
		return ""
	}
	return Unescape(raw[1 : len(raw)-1])
}

// Unescape decodes the escapes in content, the text between the quotes of a JSON string,
// exactly as gjson does (FuzzUnescape_MatchesGJSON), including for text that is not valid
// JSON, so that callers that decode unvalidated text keep their reading:
//
//   - a \u escape of a surrogate takes the \u escape that follows it, if any, as its pair:
//     a valid pair is one character, anything else is U+FFFD (the second escape included);
//     a surrogate without a following \u escape is U+FFFD;
//   - decoding stops, returning what it has, at a control character, an unknown escape or
//     an escape cut short by the end; a \u escape with a non-hex digit is U+0000;
//   - other bytes, invalid UTF-8 included, are copied as they are.
//
// Content without a backslash, nearly all, is returned as it is, without a copy (and, as
// gjson does, without looking for control characters).
//
// content must not hold an unescaped quote, nor end in an unpaired backslash (the text of a
// string always satisfies both).
func Unescape(content string) string {
	if strings.IndexByte(content, '\\') < 0 {
		return content
	}
	out := make([]byte, 0, len(content))
	for i := 0; i < len(content); i++ {
		c := content[i]
		if c < ' ' {
			break
		}
		if c != '\\' {
			out = append(out, c)
			continue
		}
		if i++; i == len(content) {
			break
		}
		switch content[i] {
		case '"', '\\', '/':
			out = append(out, content[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if len(content)-i < 5 {
				return string(out)
			}
			r := hex4(content[i+1 : i+5])
			i += 4
			if utf16.IsSurrogate(r) && len(content)-i >= 7 && content[i+1] == '\\' && content[i+2] == 'u' {
				r = utf16.DecodeRune(r, hex4(content[i+3:i+7]))
				i += 6
			}
			out = utf8.AppendRune(out, r) // a lone surrogate is written as U+FFFD
		default:
			return string(out)
		}
	}
	return string(out)
}

// hex4 returns the value of the four hex digits h, or 0 if one is not a hex digit.
func hex4(h string) rune {
	n, err := strconv.ParseUint(h, 16, 16)
	if err != nil {
		return 0
	}
	return rune(n)
}
