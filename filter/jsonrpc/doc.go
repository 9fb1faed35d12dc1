// Package jsonrpc extracts what the gateway's policy needs from the body of an MCP POST
// request: for each JSON-RPC message its kind, method and raw id, and for tools/call the
// tool name and raw arguments, and the name or URI and _meta that MCP 2026-07-28 mirrors into
// request headers. It checks those headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name)
// against the body ([CheckHeaders]) and builds the JSON-RPC error bodies the filter answers
// with. It allocates little and never panics on input.
//
// It reads a body in one pass, written for the wasm filter, where every pass over the bytes
// and every call counts (reqscan.go): a reader that validates as shared/jsontext's validator
// does (exactly what gjson.ValidBytes accepts, plus the depth limit) takes, on the way, the
// members policy needs, skipping the rest (tool arguments included) with the validation
// alone; the names it reads are matched a word at a time. Escaped strings are decoded by
// jsontext.Unquote, as gjson decoded them. Fuzz targets compare the validator with gjson (in
// shared/jsontext), the whole reading with the gjson-based reader it replaced, and with the
// two-pass reader (validation, then a second read) that came between; gjson is only a test
// dependency.
//
// A tool list in a server's answer ([RewriteToolLists]) is read in one pass too
// (toolscan.go): a reader that validates as jsontext.Validate does indexes each message, its
// result's tools and each tool's span and name, and the rewrite copies the kept tools from that
// index. FuzzRewriteToolLists_MatchesOracle compares it with the former two-pass reader.
//
// The parser is strict where leniency could hide a tool call from policy. Whatever the
// upstream MCP server reads must be what policy saw, so a body is refused when its reading
// could depend on the JSON decoder:
//
//   - invalid JSON, an empty body, nesting deeper than [MaxDepth], a top-level value that is
//     not an object or an array, an empty batch, a batch element that is not an object;
//   - a `jsonrpc` member other than "2.0", a `method` that is not a string, an `id` that is
//     not a string, number or null, `params` that are not an object or array, a message
//     that is neither a request, a notification nor a response;
//   - tools/call without an object `params` holding a non-empty string `name`, or with
//     `arguments` that are neither an object nor null;
//   - a duplicated member among the ones read (`jsonrpc`, `method`, `params`, `id`,
//     `result`, `error` and, in tools/call params, `name` and `arguments`): decoders
//     disagree on which copy wins (gjson takes the first, Go's encoding/json and
//     JavaScript the last);
//   - a member whose name differs from one of those only by case, Unicode case folding
//     included ("METHOD", "paramſ"): Go's encoding/json matches struct fields that way;
//   - a method or tool name that is not valid UTF-8 or holds U+FFFD: decoders repair broken
//     text (invalid bytes, lone surrogates in \u escapes) in different ways; or that holds
//     a control character ("search\u0000"), which no legitimate name has.
//
// Escapes are decoded as every conforming JSON decoder does: "tools\u002fcall" is
// tools/call.
package jsonrpc
