package plugintest

import (
	"strings"
)

// Cases of request bodies: size limits, JSON-RPC parsing, and body smuggling — the body the
// filter reads must be the one the upstream will read, however it arrives (chunked, ended by
// trailers, on a method that should have none).

// bodyCases are the cases of request bodies.
func bodyCases() []Case {
	mcp := "mcp.example.com"
	alice := bearer(TokenAlice)
	deny := deniedCall
	// smuggle is a POST of body to the recommended-pattern route that must be refused with
	// status (400 for a body the filter cannot read as the upstream will, 403 for a denied
	// tool), never forwarded.
	smuggle := func(name, body string, status int) Case {
		return Case{Name: name, Request: post(mcp, "/mcp", body, alice), Want: Want{Status: status, CheckCalls: -1}}
	}
	// deniedTool: a tools/call policy denies, answered with an isError result (denials.go).
	deniedTool := func(name, body string) Case {
		c := smuggle(name, body, 200)
		c.Want.BodyContains = []string{`"isError":true`, `mcp-tool-unauthorized`}
		return c
	}
	return append([]Case{
		{
			Name:    "ContentLengthOverLimitGets413BeforeBuffering",
			Request: Request{Method: "POST", Authority: "tiny.example.com", Path: "/mcp", Headers: [][2]string{jsonCT, bearer(TokenAlice), {"content-length", "101"}}, Chunks: []string{strings.Repeat(" ", 101)}},
			Want:    Want{Status: 413, CheckCalls: 0},
		},
		{
			Name:    "ChunkedBodyGrowingPastLimitGets413",
			Request: Request{Method: "POST", Authority: "tiny.example.com", Path: "/mcp", NoContentLength: true, Headers: [][2]string{jsonCT, bearer(TokenAlice)}, Chunks: []string{strings.Repeat(" ", 60), strings.Repeat(" ", 60), toolsList}},
			Want:    Want{Status: 413, CheckCalls: -1},
		},
		{
			Name:    "NotJSONGets400ParseError",
			Request: post(mcp, "/mcp", `{"jsonrpc":"2.0",`, bearer(TokenAlice)),
			Want:    Want{Status: 400, BodyContains: []string{`-32700`}, CheckCalls: -1},
		},
		{
			Name:    "EmptyPOSTGets400",
			Request: Request{Method: "POST", Authority: mcp, Path: "/mcp", Headers: [][2]string{jsonCT, bearer(TokenAlice)}},
			Want:    Want{Status: 400, BodyContains: []string{`-32700`}, CheckCalls: 0},
		},
		{
			Name:    "DuplicateMethodKeyIsRefused",
			Request: post(mcp, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"rm"}}`, bearer(TokenAlice)),
			Want:    Want{Status: 400, BodyContains: []string{`-32600`}, CheckCalls: -1},
		},
		{
			Name:    "EscapedMethodIsStillATool",
			Request: post(mcp, "/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools\u002fcall","params":{"name":"rm\u0020-rf"}}`, bearer(TokenAlice)),
			Want:    Want{Status: 200, BodyContains: []string{`"isError":true`}, LogContains: []string{`"mcp-tool":"rm -rf"`}, CheckCalls: 1},
		},
		{
			Name:    "BatchWithOneDeniedToolIsDenied",
			Request: post(mcp, "/mcp", `[`+toolsCall("1", "echo")+`,`+toolsCall("2", "shutdown")+`]`, bearer(TokenAlice)),
			Want:    Want{Status: 200, BodyContains: []string{`[{`, `"id":2`, `"isError":true`}, CheckCalls: 1},
		},
		{
			Name:    "BatchOfAllowedMessagesIsForwarded",
			Request: post(mcp, "/mcp", `[`+toolsCall("1", "echo")+`,`+toolsList+`]`, bearer(TokenAlice)),
			Want:    Want{Upstream: map[string]string{"authorization": ""}, CheckCalls: 1},
		},
	}, attacks([]Case{
		// Body smuggling: the body the filter reads is the one the upstream will read.
		smuggle("BOMBeforeTheObjectIsRefused", "\xef\xbb\xbf"+deny, 400),
		smuggle("UTF16BodyIsRefused", utf16LE(deny), 400),
		smuggle("CommentInJSONIsRefused", `/*x*/`+deny, 400),
		smuggle("TrailingGarbageAfterTheObjectIsRefused", toolsCall("1", "echo")+`x`, 400),
		smuggle("SecondObjectAfterTheFirstIsRefused", toolsCall("1", "echo")+deny, 400),
		smuggle("NestingDeeperThanTheSDKIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":`+strings.Repeat("[", 1001)+strings.Repeat("]", 1001)+`}}}`, 400),
		smuggle("DuplicateToolNameIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"delete_everything"}}`, 400),
		smuggle("EscapedDuplicateToolNameIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","n\u0061me":"delete_everything"}}`, 400),
		smuggle("CaseVariantToolNameKeyIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","Name":"delete_everything"}}`, 400),
		smuggle("LongSParamsKeyIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"param\u017f":{"name":"delete_everything"}}`, 400),
		smuggle("CaseVariantMethodKeyIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call","params":{"name":"delete_everything"}}`, 400),
		smuggle("DuplicateParamsIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"params":{"name":"delete_everything"}}`, 400),
		smuggle("NULInToolNameIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo\u0000"}}`, 400),
		smuggle("LoneSurrogateInToolNameIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo\ud800"}}`, 400),
		smuggle("InvalidUTF8InToolNameIsRefused", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\xff\"}}", 400),
		smuggle("ParamsAsArrayIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["delete_everything"]}`, 400),
		smuggle("IDAsObjectIsRefused", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"delete_everything"}}`, 400),
		smuggle("MissingJSONRPCVersionIsRefused", `{"id":1,"method":"tools/call","params":{"name":"delete_everything"}}`, 400),
		smuggle("MethodWithResultIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_everything"},"result":{}}`, 400),
		smuggle("NestedBatchIsRefused", `[[`+deny+`]]`, 400),
		smuggle("EmptyBatchIsRefused", `[]`, 400),
		deniedTool("TrailingSpaceInToolNameIsDenied", toolsCall("1", "echo ")),
		deniedTool("FullwidthToolNameIsDenied", toolsCall("1", "ｅｃｈｏ")),
		deniedTool("ZeroWidthSpaceInToolNameIsDenied", toolsCall("1", "ech\u200bo")),
		smuggle("DeniedToolAsNotificationIsDenied", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_everything"}}`, 403),
		deniedTool("DeniedToolBehindAResponseInABatchIsDenied", `[{"jsonrpc":"2.0","id":"s1","result":{}},`+deny+`]`),
		smuggle("DeniedNotificationInABatchIsDenied", `[`+toolsCall("1", "echo")+`,{"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_everything"}}]`, 403),
		deniedTool("HugeIDDoesNotHideTheTool", `{"jsonrpc":"2.0","id":1e999999,"method":"tools/call","params":{"name":"delete_everything"}}`),
		{

			Name:    "EscapedAllowedToolNameIsTheAllowedTool",
			Request: post(mcp, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"e\u0063ho"}}`, alice),
			Want:    Want{Upstream: map[string]string{"authorization": ""}, LogContains: []string{`"mcp-tool":"echo"`}, CheckCalls: 1},
		},
		// Bodies that arrive another way than a POST ending with its last data frame.
		{
			Name: "DeniedToolEndedByTrailersIsStillDenied", Request: post(mcp, "/mcp", deny, alice), Want: Want{Status: 200, BodyContains: []string{`"isError":true`}, CheckCalls: -1},
			Trailers: [][2]string{{"x-checksum", "1"}},
		},
		{
			Name: "AllowedToolEndedByTrailersIsForwardedOnlyAfterTheCheck", Request: post(mcp, "/mcp", toolsCall("1", "echo"), alice), Want: Want{Upstream: map[string]string{"authorization": ""}, CheckCalls: 1},
			Trailers: [][2]string{{"x-checksum", "1"}},
		},
		{
			Name: "InvalidTokenEndedByTrailersIsRefused", Request: post(mcp, "/mcp", toolsCall("1", "echo"), bearer(TokenInvalid)), Want: Want{Status: 401, CheckCalls: 1},
			Trailers: [][2]string{{"x-checksum", "1"}},
		},
		{
			Name: "GETWithABodyIsRefused", Request: Request{Method: "GET", Authority: mcp, Path: "/mcp", Headers: [][2]string{jsonCT, alice}, Chunks: []string{deny}}, Want: Want{Status: 400, CheckCalls: -1},
		},
		{
			Name: "LowerCasePostWithABodyIsRefused", Request: Request{Method: "post", Authority: mcp, Path: "/mcp", Headers: [][2]string{jsonCT, alice}, Chunks: []string{deny}}, Want: Want{Status: 400, CheckCalls: -1},
		},
		{
			Name: "MethodOverrideGETWithABodyIsRefused", Request: Request{Method: "GET", Authority: mcp, Path: "/mcp", Headers: [][2]string{jsonCT, alice, {"x-http-method-override", "POST"}}, Chunks: []string{deny}}, Want: Want{Status: 400, CheckCalls: -1},
			Before: []Request{post(mcp, "/mcp", toolsList, alice)},
		},
		{
			Name: "CORSPreflightWithABodyIsAnsweredNotForwarded", Request: Request{Method: "OPTIONS", Authority: mcp, Path: "/mcp", Headers: [][2]string{jsonCT, {"origin", "https://evil.example"}, {"access-control-request-method", "POST"}}, Chunks: []string{deny}}, Want: Want{Status: 204, CheckCalls: 0},
		},
	})...)
}
