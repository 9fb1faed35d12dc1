package plugintest

// Red-team cases of the request-header index (filter/plugin/reqheaders.go): names that share
// a length or a first word with a header the filter reads, so that a lookup comparing fewer
// bytes than the whole name would take them for it, and metadata headers on messages
// without _meta, which the index lets the filter skip checking when none is there.

// redTeamIndexCases are the attacks; each holds on c8ec651, before the index.
func redTeamIndexCases() []Case {
	mcp := "mcp.example.com"
	alice := bearer(TokenAlice)
	tokenOf := func(name string) [2]string { return [2]string{name, "Bearer " + TokenAlice} }
	return attacks([]Case{
		{
			// Same length as authorization or sharing its first 8 bytes: none is a credential.
			Name: "AuthorizationNeighboursAreNoCredential",
			Request: post(mcp, "/mcp", toolsList, tokenOf("authorizatiom"), tokenOf("xuthorization"), tokenOf("authorizations"),
				tokenOf("authorization_"), tokenOf("authorizat")),
			Want: Want{Status: 401, CheckCalls: 0},
		},
		{
			// content-type's neighbours (x-request-id shares its length) do not make a body JSON.
			Name: "ContentTypeNeighboursAreNoContentType",
			Request: Request{Method: "POST", Authority: mcp, Path: "/mcp", Chunks: []string{toolsList}, Headers: [][2]string{alice,
				{"content-typf", "application/json"}, {"content_type", "application/json"}, {"content-types", "application/json"},
				{"x-request-id", "application/json"}}},
			Want: Want{Status: 415, CheckCalls: 0},
		},
		{
			// Two exact application/json Content-Types (the index's two-word fast path) are
			// still two: refused once the user is known.
			Name:    "TwoJSONContentTypesAreRefused",
			Request: post(mcp, "/mcp", toolsList, alice, jsonCT),
			Want:    Want{Status: 415, CheckCalls: 1},
		},
		{
			// A neighbour of content-length before it does not hide a bad length.
			Name: "ContentLengthNeighbourDoesNotHideANegativeLength",
			Request: Request{Method: "POST", Authority: mcp, Path: "/mcp", NoContentLength: true, Chunks: []string{toolsList},
				Headers: [][2]string{jsonCT, alice, {"content-lengti", "5"}, {"mcp-session-idx", "5"}, {"content-length", "-1"}}},
			Want: Want{Status: 400, CheckCalls: 0},
		},
		{
			// Only an underscore spelling of Mcp-Name, on a message without _meta: the
			// metadata check still runs and refuses the name of another tool.
			Name:    "UnderscoreNameHeaderOnAMessageWithoutMetaIsChecked",
			Request: post(mcp, "/mcp", toolsCall("1", "echo"), alice, [2]string{"mcp_name", "delete_everything"}),
			Want:    Want{Status: 400, BodyContains: []string{`"code":-32020`, "Mcp-Name header does not match the body"}, CheckCalls: -1},
		},
		{
			// The same with the version header alone in its underscore spelling.
			Name:    "UnderscoreVersionHeaderOnAMessageWithoutMetaIsChecked",
			Request: post(mcp, "/mcp", toolsCall("1", "echo"), alice, [2]string{"mcp_protocol_version", "2026-07-28"}),
			Want:    Want{Status: 400, BodyContains: []string{`"code":-32020`}, CheckCalls: -1},
		},
	})
}
