// Package server assembles the token service: the store, the identity provider connector,
// browser sessions, the OAuth authorization server and the assertion signer, behind two
// HTTP handlers.
//
// The public handler serves the gateway paths the proxy routes to the token service on
// every configured host (sign-in, handoff, sign-out, the OAuth endpoints, the route listing
// on mcp.client hosts, the JWKS) and the authenticate host (sign-in at the identity
// provider and its callback). Every request's Host is resolved against the configuration
// first; an unknown host gets 421. The internal handler serves the check API the filter
// calls (paths.Check, authenticated by the filter key) and a health probe; it must never be
// reachable from outside the mesh.
//
// An embedding program (the local gateway) builds a Server with New and mounts
// PublicHandler and InternalHandler itself, calling RunGC for garbage collection; the
// token service command calls ListenAndServe, which does all of that on the configured
// addresses.
package server
