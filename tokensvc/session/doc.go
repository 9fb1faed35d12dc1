// Package session owns browser sessions: sign-in at the identity provider on the
// authenticate host, the one-time cross-host handoff that gives each route host its own
// host-only session cookie, sign-out, CSRF tokens bound to the session cookie, and the
// revalidation of an expired session with the identity provider. Manager implements
// oauth.Sessions.
//
// # Sign-in across hosts
//
//  1. A route host's paths.SignIn?return_to=/path (or Manager.RedirectToSignIn) checks that
//     return_to is a same-host relative path, sets the route host's pre-session cookie
//     (_gateway_signin, a random nonce), stores a one-time "signin" state bound to that
//     nonce's hash and the host, and redirects to paths.AuthenticateSignIn?state=… on the
//     authenticate host.
//  2. The authenticate host takes the state. If its own session cookie (_gateway_authn) is
//     valid it skips the provider. Otherwise it sets its flow cookie (_gateway_authn_flow),
//     stores a one-time "idp-state" record (sealed: nonce, PKCE verifier, the sign-in
//     request) bound to that cookie, and redirects to the provider.
//  3. paths.IdPCallback takes the idp-state, checks the flow cookie (a state started in
//     another browser is refused), exchanges the code, creates the store.Session (IdP
//     tokens sealed), and sets _gateway_authn (on /.gateway/authenticate/ only: it signs
//     the browser in on every route host, so no other request may carry it).
//  4. The authenticate host stores a one-time "handoff" code (60 s) naming the session,
//     the route host and the pre-session nonce hash, and redirects to the route host's
//     paths.Handoff?code=….
//  5. The route host looks the code up, checks it was minted for this host and that the
//     browser holds the pre-session nonce, and only then spends it (store.PeekOneTime, then
//     the atomic TakeOneTime): a refused attempt, from another browser or on another host,
//     leaves the code to the browser it was minted for, and of concurrent attempts (on any
//     replica) exactly one wins. It creates a store.BrowserCookie bound to the host,
//     sets checkapi.SessionCookie (HttpOnly, SameSite=Lax, Secure on https, host-only;
//     Path=/ on hosts with mcp.client or plain routes, Path=/.gateway/ on hosts that serve
//     only mcp.server routes, so the cookie never travels to an MCP server upstream) and
//     redirects to return_to.
//
// Cookies hold opaque random tokens; the store keeps only their SHA-256.
package session
