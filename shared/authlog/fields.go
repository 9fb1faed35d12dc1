package authlog

import (
	"errors"
	"strconv"
)

// Field is the name of a field of the authorization log record.
type Field string

// Fields that `authorize_log_fields` may select.
const (
	FieldRequestID         Field = "request-id"          // string: the proxy's request id
	FieldUser              Field = "user"                // string: the user's subject id
	FieldEmail             Field = "email"               // string: the user's email
	FieldAllow             Field = "allow"               // boolean: the final decision
	FieldAllowWhyTrue      Field = "allow-why-true"      // list of strings
	FieldAllowWhyFalse     Field = "allow-why-false"     // list of strings
	FieldDeny              Field = "deny"                // boolean: a deny block held
	FieldDenyWhyFalse      Field = "deny-why-false"      // list of strings
	FieldMCPMethod         Field = "mcp-method"          // string: the JSON-RPC method
	FieldMCPTool           Field = "mcp-tool"            // string: the tools/call tool name
	FieldMCPToolParameters Field = "mcp-tool-parameters" // object: the tools/call arguments
	FieldClientID          Field = "client-id"           // string: the OAuth client of the token ("" for a browser session)
	// MCP protocol revision and client of the message: from the request _meta on 2026-07-28,
	// from the initialize request's params on 2025-11-25 (the version also from the
	// MCP-Protocol-Version header of later requests).
	FieldMCPProtocolVersion Field = "mcp-protocol-version" // string
	FieldMCPClientName      Field = "mcp-client-name"      // string: clientInfo.name
	FieldMCPClientVersion   Field = "mcp-client-version"   // string: clientInfo.version
)

// Fields present in every record, which cannot be selected.
const (
	FieldLevel   Field = "level"
	FieldService Field = "service"
	FieldTime    Field = "time"
	FieldMessage Field = "message"
)

// Values of the fixed fields.
const (
	Level   = "info"
	Service = "authorize"
	Message = "authorize check"
)

var selectable = []Field{
	FieldRequestID, FieldUser, FieldEmail,
	FieldAllow, FieldAllowWhyTrue, FieldAllowWhyFalse, FieldDeny, FieldDenyWhyFalse,
	FieldMCPMethod, FieldMCPTool, FieldMCPToolParameters,
	FieldClientID,
	FieldMCPProtocolVersion, FieldMCPClientName, FieldMCPClientVersion,
}

// SelectableFields returns every field `authorize_log_fields` may hold, in the order of
// the specification.
func SelectableFields() []Field { return append([]Field(nil), selectable...) }

// DefaultFields returns the fields logged when `authorize_log_fields` is not set: the
// identity and the decision with its reasons. The MCP fields are opt-in.
func DefaultFields() []Field {
	return []Field{
		FieldRequestID, FieldUser, FieldEmail,
		FieldAllow, FieldAllowWhyTrue, FieldAllowWhyFalse, FieldDeny, FieldDenyWhyFalse,
	}
}

// DecisionFields returns the fields of the decision, which every record carries: those that
// `authorize_log_fields` does not list are written after the listed ones, in this order.
func DecisionFields() []Field {
	return []Field{FieldAllow, FieldAllowWhyTrue, FieldAllowWhyFalse, FieldDeny, FieldDenyWhyFalse}
}

// Errors wrapped by [ParseFields].
var (
	// ErrUnknownField reports a name that is not a selectable field.
	ErrUnknownField = errors.New("unknown authorization log field")
	// ErrFixedField reports a field written in every record, which cannot be selected.
	ErrFixedField = errors.New("field is always logged and cannot be selected")
	// ErrDuplicateField reports a field listed twice.
	ErrDuplicateField = errors.New("duplicate authorization log field")
)

// ParseFields validates the value of `authorize_log_fields` and returns its fields in the
// given order. An empty list selects no field beyond the fixed ones; a caller that wants
// the default for an unset key uses [DefaultFields]. The error names the offending entry.
func ParseFields(names []string) ([]Field, error) {
	out := make([]Field, 0, len(names))
	for i, name := range names {
		f := Field(name)
		var err error
		switch {
		case f == FieldLevel || f == FieldService || f == FieldTime || f == FieldMessage:
			err = ErrFixedField
		case !isSelectable(f):
			err = ErrUnknownField
		case containsField(out, f):
			err = ErrDuplicateField
		}
		if err != nil {
			return nil, &FieldError{Index: i, Name: name, Err: err}
		}
		out = append(out, f)
	}
	return out, nil
}

// FieldError is the error of [ParseFields].
type FieldError struct {
	Index int    // position in the list
	Name  string // the entry as given
	Err   error  // ErrUnknownField, ErrFixedField or ErrDuplicateField
}

func (e *FieldError) Error() string {
	return "authorize_log_fields[" + strconv.Itoa(e.Index) + "]: " + e.Err.Error() + " " + strconv.Quote(e.Name)
}

// Unwrap returns the reason of the error.
func (e *FieldError) Unwrap() error { return e.Err }

func isSelectable(f Field) bool { return containsField(selectable, f) }

func containsField(list []Field, f Field) bool {
	for _, x := range list {
		if x == f {
			return true
		}
	}
	return false
}
