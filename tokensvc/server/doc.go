// Package server assembles the token service: the store, the identity provider connector,
// browser sessions, the OAuth authorization server and the assertion signer, behind two
// HTTP handlers.
//
// routes.go is the routing table: which endpoints each kind of host serves, with which
// methods. The public handler serves the gateway paths the proxy routes to the token service
// on every configured host (sign-in, handoff, sign-out, the OAuth endpoints on mcp.server
// hosts, the route listing on mcp.client hosts, the JWKS) and the authenticate host (sign-in
// at the identity provider and its callback). Every request's Host is resolved against the
// configuration first (hosts.Middleware); an unknown host gets 421. The internal handler
// serves the check API the filter calls (paths.Check, authenticated by the filter key) and a
// health probe; it must never be reachable from outside the mesh. The handlers (here and in
// packages oauth and session) check neither method nor host: the routes do.
//
// Both handlers serve a liveness probe (paths.Health, always 200) and a readiness probe
// (paths.Ready: 200 when the store answers a read within ReadyTimeout and the identity
// provider's discovery has succeeded at least once, else 503 with a JSON body naming what is
// not ready); the internal handler also serves the Prometheus metrics (paths.Metrics). Every
// request is counted and timed by route pattern and, with WithTracerProvider, traced in a
// span that continues the caller's traceparent (package obs).
//
// Current holds the server that answers behind running listeners and can be swapped (a
// configuration reload): requests already in flight finish on the server they started on.
//
// An embedding program (the local gateway) builds a Server with New and mounts
// PublicHandler and InternalHandler itself, calling RunGC for garbage collection; the
// token service command calls ListenAndServe, which does all of that on the configured
// addresses.
package server
