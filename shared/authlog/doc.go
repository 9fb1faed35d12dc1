// Package authlog owns the gateway's authorization log record: the names of its fields,
// the validation of the `authorize_log_fields` setting, and a JSON writer fast enough for
// the proxy-wasm filter's request path (no fmt, no reflection, appends into a reusable
// buffer).
//
// Every record is one line of JSON that starts with the fixed fields
//
//	{"level":"info","service":"authorize","time":"<RFC 3339, nanoseconds>","message":"authorize check"
//
// and goes on with the selected fields in the order in which they were configured, then the
// decision fields (allow, allow-why-true, allow-why-false, deny, deny-why-false) that were not
// selected: every record carries the decision. A
// selected field is always written, with an empty value ("", false, [] or null) when the
// request has none: mcp-tool is "" and mcp-tool-parameters is null unless the message is a
// tools/call with arguments.
//
// The MCP fields are opt-in, as tool arguments may hold data that should not reach logs:
// add mcp-method, mcp-tool and mcp-tool-parameters to `authorize_log_fields`. Even then the
// values of sensitive keys (password, token, api_key, …; [Options].Redact) are written as
// "[redacted]", and arguments longer than [Options].MaxParameterBytes once compacted are
// replaced with {"[truncated]":true,"bytes":N}.
package authlog
