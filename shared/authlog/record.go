package authlog

import (
	"strings"
	"time"

	"github.com/mcpmesh/gateway/shared/policy"
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
	// MCPToolParametersValidated promises that MCPToolParameters is exactly one valid JSON
	// object, for example a member of a body the caller has already validated, so that
	// AppendJSON skips validating it again (a full pass over the text). Its strings are
	// still sanitised and it is still compacted. If the promise is broken the record stays
	// one line and the value stays inside its field (strings and brackets must balance,
	// control characters are refused, or null is written), but it may not be valid JSON.
	MCPToolParametersValidated bool
	// ClientID is the OAuth client the token was issued to ("" for a browser session).
	ClientID string
	// MCPProtocolVersion, MCPClientName and MCPClientVersion are the MCP revision the
	// message was sent under and the client's clientInfo name and version ("" when unknown).
	MCPProtocolVersion, MCPClientName, MCPClientVersion string
	// Shadow is the decision of the route's shadow policy (policy_shadow), nil when the
	// route has none. A record with one carries shadow-allow, shadow-allow-why-true,
	// shadow-allow-why-false, shadow-deny and shadow-deny-why-false after the other fields.
	Shadow *policy.Decision
}

// AppendJSON appends r as one JSON object, with the fixed fields and then fields in order,
// to dst and returns the extended slice. No newline is written, none can appear inside:
// strings are escaped and tool parameters compacted, so the record stays one line and one
// valid JSON object whatever the request held (invalid UTF-8 becomes U+FFFD). Fields that
// are not selectable are skipped. Every record carries the decision: the decision fields
// (allow, allow-why-true, allow-why-false, deny, deny-why-false) that fields does not list
// follow the listed ones, in that order. Tool parameters are redacted and bounded as by
// the default [Options]. A [Writer] does the same for many records, faster.
func AppendJSON(dst []byte, r *Record, fields []Field) []byte {
	dst = append(dst, `{"level":"`+Level+`","service":"`+Service+`","time":"`...)
	dst = r.Time.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","message":"`+Message+`"`...)
	for _, f := range fields {
		dst = appendField(dst, r, kindOf(f), defaultRed)
	}
	for _, d := range decisionKinds {
		if !listsKind(fields, d) {
			dst = appendField(dst, r, d, defaultRed)
		}
	}
	dst = appendShadow(dst, r.Shadow)
	return append(dst, '}')
}

// defaultRed is the redaction of the default Options. It has no paths, hence no state that
// writing changes: it is never modified after start-up.
var defaultRed = newRedactor(Options{})

func listsKind(fields []Field, k fieldKind) bool {
	for _, f := range fields {
		if kindOf(f) == k {
			return true
		}
	}
	return false
}

// decisionKinds are the decision fields, which every record carries.
var decisionKinds = [...]fieldKind{kindAllow, kindAllowWhyTrue, kindAllowWhyFalse, kindDeny, kindDenyWhyFalse}

// kindsOf returns the kinds of the selectable fields of fields, in order, followed by the
// decision fields fields does not list.
func kindsOf(fields []Field) []fieldKind {
	out := make([]fieldKind, 0, len(fields)+len(decisionKinds))
	for _, f := range fields {
		if k := kindOf(f); k != 0 {
			out = append(out, k)
		}
	}
	for _, d := range decisionKinds {
		if !listsKind(fields, d) {
			out = append(out, d)
		}
	}
	return out
}

// Writer writes records with one list of fields, as AppendJSON does, for a caller that
// writes many: the fields are looked up once, and the date and time are formatted once per
// second. It is not safe for concurrent use.
type Writer struct {
	fields []fieldKind
	// lits[i] is the text before the value of fields[i]: the quote that closes the string
	// before it, the member name, the quote that opens its string; lits[0] starts with the
	// message. tail closes the last value. A record is then one append of a constant and one
	// of a value per field (each append is a call in the wasm filter).
	lits []string
	tail string
	red  *redactor
	// The time of the last record up to its seconds, and its zone, as RFC 3339 text; the
	// fraction of a second goes between them.
	sec               int64
	loc               *time.Location
	secText, zoneText string
}

// NewWriter returns a Writer of the given fields (not selectable ones are skipped, missing
// decision fields follow the listed ones) with the default [Options].
func NewWriter(fields []Field) *Writer { return NewWriterOptions(fields, Options{}) }

// NewWriterOptions returns a Writer of the given fields, as NewWriter, that redacts and
// bounds tool parameters as o says.
func NewWriterOptions(fields []Field, o Options) *Writer {
	w := &Writer{fields: kindsOf(fields), red: newRedactor(o)}
	lit := `","message":"` + Message + `"`
	for _, k := range w.fields {
		lit += fieldNames[k]
		if isStringKind(k) {
			lit += `"`
		}
		w.lits = append(w.lits, lit)
		lit = ""
		if isStringKind(k) {
			lit = `"`
		}
	}
	w.tail = lit
	return w
}

// Append appends r to dst as AppendJSON(dst, r, fields) does and returns the extended slice.
func (w *Writer) Append(dst []byte, r *Record) []byte {
	dst = append(dst, `{"level":"`+Level+`","service":"`+Service+`","time":"`...)
	dst = w.appendTime(dst, r.Time)
	for i, k := range w.fields {
		dst = append(dst, w.lits[i]...)
		dst = appendValue(dst, r, k, w.red)
	}
	dst = append(dst, w.tail...)
	dst = appendShadow(dst, r.Shadow)
	return append(dst, '}')
}

// appendTime appends t as t.AppendFormat(dst, time.RFC3339Nano) does. The text of the whole
// second and of the zone is kept from the previous record of the same second: formatting a
// time costs thousands of instructions in the wasm filter.
func (w *Writer) appendTime(dst []byte, t time.Time) []byte {
	if sec := t.Unix(); w.secText == "" || sec != w.sec || t.Location() != w.loc {
		text := string(t.Truncate(time.Second).AppendFormat(nil, time.RFC3339Nano))
		cut := strings.IndexByte(text, 'T') + len("T15:04:05")
		if cut < len("T15:04:05") || cut > len(text) {
			return t.AppendFormat(dst, time.RFC3339Nano)
		}
		w.sec, w.loc, w.secText, w.zoneText = sec, t.Location(), text[:cut], text[cut:]
	}
	dst = append(dst, w.secText...)
	if ns := uint32(t.Nanosecond()); ns != 0 {
		// ".999999999": nine digits without their trailing zeros, written two at a time
		// (each turn of a loop costs more than its arithmetic in the wasm filter).
		var frac [10]byte
		frac[0] = '.'
		frac[9] = byte('0' + ns%10)
		ns /= 10
		for i := 7; i > 0; i -= 2 {
			d := ns % 100 * 2
			frac[i], frac[i+1] = digitPairs[d], digitPairs[d+1]
			ns /= 100
		}
		n := len(frac)
		for frac[n-1] == '0' {
			n--
		}
		dst = append(dst, frac[:n]...)
	}
	return append(dst, w.zoneText...)
}

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// fieldKind numbers the selectable fields, so that writing a record does not compare names.
type fieldKind uint8

const (
	kindRequestID fieldKind = iota + 1
	kindUser
	kindEmail
	kindAllow
	kindAllowWhyTrue
	kindAllowWhyFalse
	kindDeny
	kindDenyWhyFalse
	kindMCPMethod
	kindMCPTool
	kindMCPToolParameters
	kindClientID
	kindMCPProtocolVersion
	kindMCPClientName
	kindMCPClientVersion
)

// kindOf returns the kind of f, or 0 if f is not selectable.
func kindOf(f Field) fieldKind {
	switch f {
	case FieldRequestID:
		return kindRequestID
	case FieldUser:
		return kindUser
	case FieldEmail:
		return kindEmail
	case FieldAllow:
		return kindAllow
	case FieldAllowWhyTrue:
		return kindAllowWhyTrue
	case FieldAllowWhyFalse:
		return kindAllowWhyFalse
	case FieldDeny:
		return kindDeny
	case FieldDenyWhyFalse:
		return kindDenyWhyFalse
	case FieldMCPMethod:
		return kindMCPMethod
	case FieldMCPTool:
		return kindMCPTool
	case FieldMCPToolParameters:
		return kindMCPToolParameters
	case FieldClientID:
		return kindClientID
	case FieldMCPProtocolVersion:
		return kindMCPProtocolVersion
	case FieldMCPClientName:
		return kindMCPClientName
	case FieldMCPClientVersion:
		return kindMCPClientVersion
	}
	return 0
}

// fieldNames holds the text before each kind's value: a comma and the member name.
var fieldNames = [...]string{
	kindRequestID:          `,"request-id":`,
	kindUser:               `,"user":`,
	kindEmail:              `,"email":`,
	kindAllow:              `,"allow":`,
	kindAllowWhyTrue:       `,"allow-why-true":`,
	kindAllowWhyFalse:      `,"allow-why-false":`,
	kindDeny:               `,"deny":`,
	kindDenyWhyFalse:       `,"deny-why-false":`,
	kindMCPMethod:          `,"mcp-method":`,
	kindMCPTool:            `,"mcp-tool":`,
	kindMCPToolParameters:  `,"mcp-tool-parameters":`,
	kindClientID:           `,"client-id":`,
	kindMCPProtocolVersion: `,"mcp-protocol-version":`,
	kindMCPClientName:      `,"mcp-client-name":`,
	kindMCPClientVersion:   `,"mcp-client-version":`,
}

// isStringKind reports whether the value of k is a JSON string.
func isStringKind(k fieldKind) bool {
	switch k {
	case 0, kindAllow, kindAllowWhyTrue, kindAllowWhyFalse, kindDeny, kindDenyWhyFalse, kindMCPToolParameters:
		return false
	}
	return true
}

// appendField appends one member of the record: its name and its value (nothing for kind 0).
func appendField(dst []byte, r *Record, k fieldKind, red *redactor) []byte {
	if k == 0 {
		return dst
	}
	dst = append(dst, fieldNames[k]...)
	if !isStringKind(k) {
		return appendValue(dst, r, k, red)
	}
	dst = append(dst, '"')
	dst = appendValue(dst, r, k, red)
	return append(dst, '"')
}

// appendValue appends the value of the member k of the record, a string without its quotes.
func appendValue(dst []byte, r *Record, k fieldKind, red *redactor) []byte {
	var s string
	switch k {
	case kindRequestID:
		s = r.RequestID
	case kindUser:
		s = r.User
	case kindEmail:
		s = r.Email
	case kindAllow:
		return appendBool(dst, r.Decision.Allow)
	case kindAllowWhyTrue:
		return appendReasons(dst, r.Decision.AllowWhyTrue)
	case kindAllowWhyFalse:
		return appendReasons(dst, r.Decision.AllowWhyFalse)
	case kindDeny:
		return appendBool(dst, r.Decision.Deny)
	case kindDenyWhyFalse:
		return appendReasons(dst, r.Decision.DenyWhyFalse)
	case kindMCPMethod:
		s = r.MCPMethod
	case kindMCPTool:
		s = r.MCPTool
	case kindMCPToolParameters:
		return appendParameters(dst, r.MCPToolParameters, r.MCPToolParametersValidated, red)
	case kindClientID:
		s = r.ClientID
	case kindMCPProtocolVersion:
		s = r.MCPProtocolVersion
	case kindMCPClientName:
		s = r.MCPClientName
	case kindMCPClientVersion:
		s = r.MCPClientVersion
	}
	if s == "" {
		return dst // often: the MCP client fields of most messages
	}
	return appendStringContent(dst, s)
}

// appendShadow appends the shadow decision's fields, when there is one.
func appendShadow(dst []byte, d *policy.Decision) []byte {
	if d == nil {
		return dst
	}
	dst = appendBool(append(dst, `,"shadow-allow":`...), d.Allow)
	dst = appendReasons(append(dst, `,"shadow-allow-why-true":`...), d.AllowWhyTrue)
	dst = appendReasons(append(dst, `,"shadow-allow-why-false":`...), d.AllowWhyFalse)
	dst = appendBool(append(dst, `,"shadow-deny":`...), d.Deny)
	return appendReasons(append(dst, `,"shadow-deny-why-false":`...), d.DenyWhyFalse)
}
