package plugin

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/filter/jsonrpc"
	"github.com/mcpmesh/gateway/shared/ascii"
	"github.com/mcpmesh/gateway/shared/checkapi"
)

// indexedNames are the names of the indexed headers, by index.
var indexedNames = [numIndexedHeaders]string{
	hAuthority:       ":authority",
	hPath:            ":path",
	hMethod:          ":method",
	hRequestID:       "x-request-id",
	hOrigin:          "origin",
	hAuthorization:   "authorization",
	hContentEncoding: "content-encoding",
	hContentLength:   "content-length",
	hCookie:          "cookie",
	hAccept:          "accept",
	hACRequestMethod: "access-control-request-method",
}

// checkIndex compares the index of hdrs with the scans it replaces: header() for each
// indexed name, contentTypeOf, and the loops its flags let the filter skip (each flag must be
// set whenever its loop would find something).
func checkIndex(t *testing.T, hdrs []Header) {
	t.Helper()
	s := &stream{hdrs: hdrs}
	s.indexHeaders()
	for k, name := range indexedNames {
		gv, gok := s.indexed(k)
		wv, wok := s.header(name)
		if gv != wv || gok != wok {
			t.Fatalf("%q in %q: indexed %q, %v; header %q, %v", name, hdrs, gv, gok, wv, wok)
		}
	}
	if g, w := s.contentType(), contentTypeOf(hdrs); g != w {
		t.Fatalf("content type of %q: indexed %d, scanned %d", hdrs, g, w)
	}
	var assertion, acceptEncoding, session bool
	for _, h := range hdrs {
		n := h.Name
		assertion = assertion || len(n) == len(checkapi.AssertionHeader) &&
			(ascii.EqualFold(n, checkapi.AssertionHeader) || isUnderscoreSpelling(n, checkapi.AssertionHeader))
		acceptEncoding = acceptEncoding || len(n) == len("accept-encoding") && ascii.EqualFold(n, "accept-encoding")
		session = session || isName(n, sessionHeader) || isUnderscoreSpelling(n, sessionHeader)
	}
	if assertion && !s.idx.assertionLen {
		t.Fatalf("%q: an assertion spelling the index did not flag", hdrs)
	}
	if acceptEncoding != s.idx.acceptEncoding {
		t.Fatalf("%q: accept-encoding %v, index %v", hdrs, acceptEncoding, s.idx.acceptEncoding)
	}
	if session && !s.idx.sessionLen {
		t.Fatalf("%q: a session header the index did not flag", hdrs)
	}
	if !s.idx.mcpMeta {
		// mcpHeaders' loop, which the flag skips, must find nothing.
		s.idx.mcpMeta = true
		if h := s.mcpHeaders(); h.NProtocolVersion+h.NMethod+h.NName != 0 {
			t.Fatalf("%q: metadata headers %+v the index did not flag", hdrs, h)
		}
	}
}

func TestHdrIndex_MatchesScans(t *testing.T) {
	t.Parallel()
	cases := [][]Header{
		nil,
		{{":method", "POST"}, {":path", "/mcp"}, {":authority", "mcp.example.com"}, {":scheme", "https"},
			{"x-request-id", "r1"}, {"content-length", "12"}, {"content-type", "application/json"}, {"authorization", "Bearer t"}},
		{{":path", "/a"}, {":path", "/b"}, {"content-type", "application/json"}, {"content-type", "text/plain"}},
		{{"Content-Type", "application/json"}, {":Path", "/x"}, {"X-Request-Id", "r"}, {"AUTHORIZATION", "Bearer t"}},
		{{"mcp-session-id", "s"}, {"mcp_session_id", "t"}, {"mcp-name", "echo"}, {"mcp_method", "tools/call"}, {"mcp-protocol-version", "2026-07-28"}},
		{{"MCP-Name", "x"}, {"Mcp-Method", "y"}, {"mcpXname", "z"}, {"mcp-namf", "w"}},
		{{"x-gateway-assertion", "a"}, {"X_Gateway_Assertion", "b"}, {"x_gateway-assertion", "c"}},
		{{"Accept-Encoding", "gzip"}, {"accept-encodinG", "br"}, {"accept_encoding", "x"}},
		{{"origin", "https://a"}, {"cookie", "a=b"}, {"accept", "text/html"}, {"access-control-request-method", "POST"}, {"content-encoding", "gzip"}},
		{{"", ""}, {":", ":"}, {"\x00\x00\x00\x00\x00", ""}, {"cookie", "1"}, {"cookie", "2"}},
	}
	for _, hdrs := range cases {
		checkIndex(t, hdrs)
	}
}

// FuzzHdrIndex_MatchesScans reads headers from "name:value" lines (the first ':' after the
// first byte splits them, so that pseudo-headers can be written).
func FuzzHdrIndex_MatchesScans(f *testing.F) {
	for _, s := range []string{
		":method:POST\n:path:/mcp\n:authority:mcp.example.com\ncontent-type:application/json\ncontent-type:a\nauthorization:Bearer x",
		"mcp_session_id:a\nmcp-session-id:b\nMcp-Name:c\nmcp_protocol_version:d\nmcp-method:e",
		"X-Gateway-Assertion:a\nx_gateway_assertion:b\nAccept-Encoding:gzip\ncontent-length:3\ncookie:a=b",
		"x-request-id:1\nx-request-id:2\norigin:o\naccept:text/html\naccess-control-request-method:GET\ncontent-encoding:br",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var hdrs []Header
		for line := range strings.SplitSeq(in, "\n") {
			name, value := line, ""
			if i := strings.IndexByte(line[min(1, len(line)):], ':'); i >= 0 {
				name, value = line[:i+1], line[i+2:]
			}
			hdrs = append(hdrs, Header{name, value})
		}
		checkIndex(t, hdrs)
	})
}

// The trims and the Content-Length reader against the strings and strconv functions they
// stand for.
func checkTrimsAndLength(t *testing.T, s string) {
	t.Helper()
	if g, w := trimOWS(s), strings.Trim(s, " \t"); g != w {
		t.Fatalf("trimOWS(%q) = %q, want %q", s, g, w)
	}
	if g, w := trimSpace(s), strings.TrimSpace(s); g != w {
		t.Fatalf("trimSpace(%q) = %q, want %q", s, g, w)
	}
	n, ok := parseContentLength(s)
	wn, err := strconv.ParseInt(s, 10, 64)
	if wok := err == nil && wn >= 0; ok != wok || ok && n != wn {
		t.Fatalf("parseContentLength(%q) = %d, %v; strconv: %d, %v", s, n, ok, wn, err)
	}
}

func TestTrimsAndContentLength_MatchStdlib(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", " ", "\t", "12", " 12 ", "\t12\t", "+0", "-0", "-1", "+", "-", "1_0", "0x10", "١٢",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "00000000000000000000000001", "12\u00a0",
		"\u00a012", "\u0085", "a b", " \t a\t ", "\xff", "1\xff", "\v1\f"} {
		checkTrimsAndLength(t, s)
	}
}

func FuzzTrimsAndContentLength_MatchStdlib(f *testing.F) {
	for _, s := range []string{"12", " 12 ", "-0", "+7", "9223372036854775808", "\u00a01\u2000", "\t \t"} {
		f.Add(s)
	}
	f.Fuzz(checkTrimsAndLength)
}

// contentTypeOf judges the Content-Type headers of hdrs by scanning them, as the filter did
// before its header index: the oracle the index's contentType is checked against.
func contentTypeOf(hdrs []Header) int {
	n, ct := 0, ""
	for i := range hdrs {
		if isName(hdrs[i].Name, "content-type") {
			n++
			ct = hdrs[i].Value
		}
	}
	return judgeContentType(n, ct)
}

// refJudgeContentType is judgeContentType without its fast path for "application/json": the
// oracle of FuzzJudgeContentType_MatchesReference.
func refJudgeContentType(n int, ct string) int {
	if n == 0 {
		return ctNotJSON
	}
	mt, params, hasParams := strings.Cut(ct, ";")
	if !ascii.EqualFold(trimOWS(mt), "application/json") {
		return ctNotJSON
	}
	if n > 1 {
		return ctUnsupported
	}
	if !hasParams {
		return ctJSON
	}
	name, value, ok := strings.Cut(trimOWS(params), "=")
	if !ok || !ascii.EqualFold(name, "charset") {
		return ctUnsupported
	}
	if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
		value = value[1 : len(value)-1]
	}
	if !ascii.EqualFold(value, "utf-8") {
		return ctUnsupported
	}
	return ctJSON
}

func FuzzJudgeContentType_MatchesReference(f *testing.F) {
	for _, s := range []string{"application/json", "Application/JSON", "application/jsoN;charset=utf-8", "application/json ", "application/jsox", "text/plain"} {
		f.Add(uint8(1), s)
		f.Add(uint8(2), s)
	}
	f.Fuzz(func(t *testing.T, n uint8, ct string) {
		if g, w := judgeContentType(int(n%3), ct), refJudgeContentType(int(n%3), ct); g != w {
			t.Fatalf("judgeContentType(%d, %q) = %d, want %d", n%3, ct, g, w)
		}
	})
}

// checkNothingToCheck holds jsonrpc.CheckHeaders to what checkMCPHeaders' shortcut assumes:
// without a metadata header, a body that is a batch, or whose one message has no _meta,
// passes with no version.
func checkNothingToCheck(t *testing.T, body string) {
	t.Helper()
	b, err := jsonrpc.Parse([]byte(body))
	if err != nil || !b.Array && len(b.Messages) > 0 && b.Messages[0].Meta != "" {
		return
	}
	if version, problem := jsonrpc.CheckHeaders(&jsonrpc.MCPHeaders{}, &b); version != "" || problem != "" {
		t.Fatalf("CheckHeaders(no headers, %q) = %q, %q", body, version, problem)
	}
}

var nothingToCheckSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}]`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2026-07-28","clientInfo":{"name":"c","version":"1"}}}`,
}

func TestCheckHeaders_NothingToCheckWithoutHeadersOrMeta(t *testing.T) {
	t.Parallel()
	for _, body := range nothingToCheckSeeds {
		checkNothingToCheck(t, body)
	}
}

func FuzzCheckHeaders_NothingToCheckWithoutHeadersOrMeta(f *testing.F) {
	for _, body := range nothingToCheckSeeds {
		f.Add(body)
	}
	f.Fuzz(checkNothingToCheck)
}

// A host that calls proxy_on_request_headers again for a stream (Envoy does not; a confused
// host might) hands over a new header list: the index is that list's, not positions left
// from the first one, which would read another header's value as :authority or
// authorization, count content-type twice, or index past the shorter list's end (a panic).
// header() read the new list before the index existed.
func TestHdrIndex_RebuiltForEachHeaderList(t *testing.T) {
	t.Parallel()
	first := []Header{{"x-pad", "1"}, {":authority", "mcp.example.com"}, {"authorization", "Bearer alice"},
		{"content-type", "application/json"}, {":path", "/mcp"}, {"mcp-name", "echo"}}
	second := []Header{{":authority", "other.example.com"}, {"x-evil", "Bearer mallory"}, {"content-type", "application/json"}}
	s := &stream{hdrs: first}
	s.indexHeaders()
	s.hdrs = second
	s.indexHeaders()
	want := &stream{hdrs: second}
	want.indexHeaders()
	if s.idx != want.idx {
		t.Fatalf("index after a second header list: %+v, want %+v", s.idx, want.idx)
	}
	checkIndex(t, second)
}
