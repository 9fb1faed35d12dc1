// Package check owns what the check API decides: given the filter's request (a route, the
// request's host and one credential), whether the request may proceed and with what.
//
// Checker.Check looks the route up, checks the host is the route's, and validates exactly
// one credential: an External Token on MCP server routes (valid for the route, with a live
// session of the same subject), or a browser session cookie on mcp.client and plain routes
// (bound to the route's host, its session live). It then assembles the answer
// (checkapi.Response): the identity of the session, the MCP session key on MCP server routes
// (an HMAC of route and subject under a key derived from shared_secret, the same on every
// replica), a client token on mcp.client routes, the user's Internal Token on routes with
// upstream OAuth, and an assertion signed for the route's host, expiring with the earliest
// of all of these. Anything else is a Refusal, typed by its checkapi status (invalid_request,
// invalid_token, no_session, upstream_required) with the HTTP status checkapi.HTTPStatus
// gives it, or carrying the service's own failure.
//
// No call leaves the service here: no identity provider, no upstream. The HTTP adapter (the
// filter key, decoding, replying, logging) is package server's.
package check
