package authlog

import (
	"time"
	"unicode/utf8"

	"github.com/mcpmesh/gateway/shared/policy"
	"github.com/tidwall/gjson"
)

// Record is one authorization check.
type Record struct {
	// Time is when the check happened.
	Time time.Time
	// RequestID is the proxy's request id.
	RequestID string
	// User is the subject id of the user, Email their email ("" without identity).
	User, Email string
	// Decision is the policy decision with its reasons.
	Decision policy.Decision
	// MCPMethod is the JSON-RPC method, MCPTool the tool of a tools/call.
	MCPMethod, MCPTool string
	// MCPToolParameters is the raw JSON object of the tools/call arguments ("" when
	// none). It is written compacted; anything but a valid JSON object is written as null.
	MCPToolParameters string
}

// AppendJSON appends r as one JSON object, with the fixed fields and then fields in order,
// to dst and returns the extended slice. No newline is written, none can appear inside:
// strings are escaped and tool parameters compacted, so the record stays one line and one
// valid JSON object whatever the request held (invalid UTF-8 becomes U+FFFD). Fields that
// are not selectable are skipped.
func AppendJSON(dst []byte, r *Record, fields []Field) []byte {
	dst = append(dst, `{"level":"`+Level+`","service":"`+Service+`","time":"`...)
	dst = r.Time.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","message":"`+Message+`"`...)
	for _, f := range fields {
		if !isSelectable(f) {
			continue
		}
		dst = append(dst, ',', '"')
		dst = append(dst, f...)
		dst = append(dst, '"', ':')
		switch f {
		case FieldRequestID:
			dst = appendString(dst, r.RequestID)
		case FieldUser:
			dst = appendString(dst, r.User)
		case FieldEmail:
			dst = appendString(dst, r.Email)
		case FieldAllow:
			dst = appendBool(dst, r.Decision.Allow)
		case FieldAllowWhyTrue:
			dst = appendReasons(dst, r.Decision.AllowWhyTrue)
		case FieldAllowWhyFalse:
			dst = appendReasons(dst, r.Decision.AllowWhyFalse)
		case FieldDeny:
			dst = appendBool(dst, r.Decision.Deny)
		case FieldDenyWhyFalse:
			dst = appendReasons(dst, r.Decision.DenyWhyFalse)
		case FieldMCPMethod:
			dst = appendString(dst, r.MCPMethod)
		case FieldMCPTool:
			dst = appendString(dst, r.MCPTool)
		case FieldMCPToolParameters:
			dst = appendObject(dst, r.MCPToolParameters)
		}
	}
	return append(dst, '}')
}

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

func appendReasons(dst []byte, rs policy.Reasons) []byte {
	dst = append(dst, '[')
	first := true
	for r := range rs.All() {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendString(dst, r.String())
	}
	return append(dst, ']')
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string. Control characters, quotes and backslashes are
// escaped, U+2028 and U+2029 too (for JavaScript consumers); invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendStringContent(dst, s)
	return append(dst, '"')
}

func appendStringContent(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// appendObject appends raw, a JSON object, without insignificant whitespace and with its
// strings sanitised like appendString's; anything but a valid JSON object is written as
// null.
func appendObject(dst []byte, raw string) []byte {
	i := 0
	for i < len(raw) && isSpace(raw[i]) {
		i++
	}
	if i == len(raw) || raw[i] != '{' || !gjson.Valid(raw) {
		return append(dst, "null"...)
	}
	for i < len(raw) {
		c := raw[i]
		switch {
		case isSpace(c):
			i++
		case c == '"':
			// raw is valid JSON: the string ends at the first unescaped quote.
			j := i + 1
			for raw[j] != '"' {
				if raw[j] == '\\' {
					j++
				}
				j++
			}
			dst = append(dst, '"')
			dst = appendRawStringContent(dst, raw[i+1:j])
			dst = append(dst, '"')
			i = j + 1
		default:
			dst = append(dst, c)
			i++
		}
	}
	return dst
}

// appendRawStringContent appends the content of a valid JSON string literal, keeping its
// escapes and replacing invalid UTF-8 with U+FFFD and U+2028/U+2029 with escapes.
func appendRawStringContent(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
