// Package reqid owns the request ID of the token service: the one ID a request to either
// listener is known by, in its response header, its log records and the pages it shows.
//
// Middleware chooses it once per request. It takes the proxy's X-Request-Id when that is
// well formed (1–64 characters of [A-Za-z0-9._-]) and otherwise makes a fresh one; a value
// the client sent that is not well formed is never used anywhere. The chosen ID is echoed in
// the response's X-Request-Id, replaces the request's header and travels in the request's
// context, where FromContext finds it. A request that already carries an ID in its context
// (an embedding program ran Middleware first) keeps it: there is only ever one.
//
// NewHandler wraps a slog.Handler so that every record logged with a request's context
// carries that ID once, as the attribute "request_id"; callers never add it themselves.
package reqid
