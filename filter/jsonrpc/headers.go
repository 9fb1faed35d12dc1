package jsonrpc

import (
	"encoding/base64"
	"strings"
)

// The MCP protocol revisions whose rules the gateway knows.
const (
	// Revision20251125 is the last revision with the initialize handshake and sessions.
	Revision20251125 = "2025-11-25"
	// Revision20260728 is the stateless revision: protocol version and client in _meta, and
	// the Mcp-Method and Mcp-Name request headers required and checked against the body.
	Revision20260728 = "2026-07-28"
)

// CodeHeaderMismatch answers a request whose MCP request metadata headers are missing,
// malformed or disagree with its body (MCP 2026-07-28, "HeaderMismatch").
const CodeHeaderMismatch = -32020

// Keys of the MCP 2026-07-28 request _meta.
const (
	MetaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo      = "io.modelcontextprotocol/clientInfo"
)

// base64 sentinel of Mcp-Name and Mcp-Param-* values that are not plain ASCII.
const (
	sentinelPrefix = "=?base64?"
	sentinelSuffix = "?="
)

// MCPHeaders are the request metadata headers of the Streamable HTTP transport as a request
// carried them: the value of each (OWS trimmed) and how many times it appeared.
type MCPHeaders struct {
	ProtocolVersion, Method, Name    string
	NProtocolVersion, NMethod, NName int
}

// Client is what a request says of the client and the protocol revision it speaks.
type Client struct {
	ProtocolVersion, Name, Version string
}

// CheckHeaders checks the request metadata headers h against the parsed body b, as MCP
// 2026-07-28 asks of servers ("Server Validation") and the gateway asks of every revision:
//
//   - each header at most once; MCP-Protocol-Version, Mcp-Method and a plain Mcp-Name visible
//     ASCII, an encoded Mcp-Name (=?base64?…?=) strict base64;
//   - MCP-Protocol-Version equal to the body's _meta protocol version when both are given,
//     and present when the body gives one;
//   - Mcp-Method, when present, equal to the method of the one request or notification
//     (never on a batch or a response); Mcp-Name, when present, equal (decoded) to the name
//     or URI that tools/call, prompts/get or resources/read carry, and absent otherwise;
//   - from revision 2026-07-28 on (a version of the form YYYY-MM-DD; an unknown form is left
//     to the server, which refuses it): Mcp-Method required on every request, Mcp-Name on a
//     request that names a tool, prompt or resource, and no batch.
//
// It returns the protocol version of the request (the header's, else the body's, else "")
// and "" or what is wrong, for the error message; the problem never quotes a header value.
func CheckHeaders(h *MCPHeaders, b *Batch) (version, problem string) {
	switch {
	case h.NProtocolVersion > 1:
		return "", "MCP-Protocol-Version header given more than once"
	case h.NMethod > 1:
		return "", "Mcp-Method header given more than once"
	case h.NName > 1:
		return "", "Mcp-Name header given more than once"
	case h.NProtocolVersion == 1 && !plainHeaderValue(h.ProtocolVersion):
		return "", "MCP-Protocol-Version header is malformed"
	case h.NMethod == 1 && !plainHeaderValue(h.Method):
		return "", "Mcp-Method header is malformed"
	}
	name, nameOK := "", true
	if h.NName == 1 {
		name, nameOK = decodeHeaderValue(h.Name)
		if !nameOK {
			return "", "Mcp-Name header is malformed"
		}
	}
	version = h.ProtocolVersion
	if len(b.Messages) == 0 {
		return version, ""
	}
	if b.Array {
		switch {
		case h.NMethod > 0 || h.NName > 0:
			return version, "Mcp-Method and Mcp-Name headers cannot describe a batch"
		case isDate(version) && version >= Revision20260728:
			return version, "batches are not part of protocol version " + version
		}
		return version, ""
	}
	m := &b.Messages[0]
	if m.Meta != "" {
		bodyVersion, ok := metaString(m.Meta, MetaProtocolVersion)
		switch {
		case !ok:
			return version, "_meta protocol version is ambiguous"
		case bodyVersion == "":
		case h.NProtocolVersion == 0:
			return bodyVersion, "MCP-Protocol-Version header missing"
		case bodyVersion != version:
			return version, "MCP-Protocol-Version header does not match the body"
		}
	}
	// A version the server does not know is the server's to refuse (UnsupportedProtocolVersion,
	// -32022); the headers it would require are then not required here, only checked when given.
	modern := isDate(version) && version >= Revision20260728
	if m.Kind == KindResponse {
		if h.NMethod > 0 || h.NName > 0 {
			return version, "Mcp-Method or Mcp-Name header on a response"
		}
		return version, ""
	}
	switch {
	case h.NMethod == 1 && h.Method != m.Method:
		return version, "Mcp-Method header does not match the body"
	case h.NMethod == 0 && modern && m.Kind == KindRequest:
		return version, "Mcp-Method header missing"
	}
	switch {
	case h.NName == 1 && m.Name == "":
		return version, "Mcp-Name header on a request that names no tool, prompt or resource"
	case h.NName == 1 && name != m.Name:
		return version, "Mcp-Name header does not match the body"
	case h.NName == 0 && m.Name != "" && modern && m.Kind == KindRequest:
		return version, "Mcp-Name header missing"
	}
	return version, ""
}

// ReadClient returns what message m says of its client: on 2026-07-28 the protocol version and
// clientInfo of its _meta, on earlier revisions those of an initialize request's params.
// Fields it cannot read unambiguously are "".
func ReadClient(m *Message) Client {
	var c Client
	src, versionKey, infoKey := m.Meta, MetaProtocolVersion, MetaClientInfo
	if m.Method == "initialize" && isObject(m.Params) {
		src, versionKey, infoKey = m.Params, "protocolVersion", "clientInfo"
	}
	if src == "" {
		return c
	}
	var out [2]string
	if _, reason := readMembers(src, []string{versionKey, infoKey}, out[:], "", nil, nil); reason != "" {
		return c
	}
	if isString(out[0]) {
		c.ProtocolVersion = decodeString(out[0])
	}
	if isObject(out[1]) {
		var info [2]string
		if _, reason := readMembers(out[1], []string{"name", "version"}, info[:], "", nil, nil); reason == "" {
			if isString(info[0]) {
				c.Name = decodeString(info[0])
			}
			if isString(info[1]) {
				c.Version = decodeString(info[1])
			}
		}
	}
	return c
}

// metaString returns the string member key of the raw object obj ("" when absent or not a
// string); ok is false when obj names it twice, or spells it otherwise only by case.
func metaString(obj, key string) (string, bool) {
	var out [1]string
	if _, reason := readMembers(obj, []string{key}, out[:], "", nil, nil); reason != "" {
		return "", false
	}
	if !isString(out[0]) {
		return "", true
	}
	return decodeString(out[0]), true
}

// isDate reports whether s has the form of a protocol version, YYYY-MM-DD.
func isDate(s string) bool {
	if len(s) != len("2006-01-02") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i == 4 || i == 7 {
			if s[i] != '-' {
				return false
			}
		} else if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// plainHeaderValue reports whether v is a non-empty field value of visible ASCII, spaces and
// tabs (RFC 9110): what MCP allows unencoded.
func plainHeaderValue(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x21 || c > 0x7e) && c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// decodeHeaderValue decodes an Mcp-Name (or Mcp-Param-*) value: the UTF-8 text of a
// =?base64?…?= sentinel (standard alphabet, padded, strict), or the plain value itself.
func decodeHeaderValue(v string) (string, bool) {
	if !plainHeaderValue(v) {
		return "", false
	}
	if !strings.HasPrefix(v, sentinelPrefix) || !strings.HasSuffix(v, sentinelSuffix) || len(v) < len(sentinelPrefix)+len(sentinelSuffix) {
		return v, true
	}
	enc := v[len(sentinelPrefix) : len(v)-len(sentinelSuffix)]
	dec, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil || len(dec) == 0 {
		return "", false
	}
	return string(dec), true
}

// IsModern reports whether version is a protocol version of the form YYYY-MM-DD from
// Revision20260728 on: the stateless revisions whose results carry resultType and whose
// requests must carry the request metadata headers.
func IsModern(version string) bool { return isDate(version) && version >= Revision20260728 }
