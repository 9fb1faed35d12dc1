// Package authlog owns the gateway's authorization log record: the names of its fields,
// the validation of the `authorize_log_fields` setting, and a JSON writer fast enough for
// the proxy-wasm filter's request path (no fmt, no reflection, appends into a reusable
// buffer).
//
// Every record is one line of JSON that starts with the fixed fields
//
//	{"level":"info","service":"authorize","time":"<RFC 3339, nanoseconds>","message":"authorize check"
//
// and goes on with the selected fields in the order in which they were configured. A
// selected field is always written, with an empty value ("", false, [] or null) when the
// request has none: mcp-tool is "" and mcp-tool-parameters is null unless the message is a
// tools/call with arguments.
//
// The MCP fields are opt-in, as tool arguments may hold data that should not reach logs:
// add mcp-method, mcp-tool and mcp-tool-parameters to `authorize_log_fields`.
package authlog
