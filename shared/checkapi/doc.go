// Package checkapi holds the wire types of the internal check API: the filter asks the token
// service, over proxy_http_call, for a decision bundle about the credential a request carries.
//
// The call is a POST of a JSON Request to paths.Check on the token service's internal
// listener, authenticated by the filter key in KeyHeader. The answer is a JSON Response:
// status 200 with Status "ok" carries the bundle; 401 carries Status "invalid_token" or
// "no_session", or "upstream_required" when the user has no usable Internal Token for the
// route (the filter answers 401 invalid_token); any other status, a malformed body or no
// answer at all makes the filter fail closed.
package checkapi
