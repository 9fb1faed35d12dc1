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
//     (_gateway_signin, a random nonce) and redirects to paths.AuthenticateSignIn?state=… on
//     the authenticate host, where state is the sign-in request (host, return_to, the
//     nonce's hash) sealed with its expiry (10 minutes). Nothing is stored.
//  2. The authenticate host opens the state. If its own session cookie (_gateway_authn) is
//     valid it skips the provider. Otherwise it sets its flow cookie (_gateway_authn_flow, a
//     random value shared by the browser's tabs) and redirects to the provider with a state
//     sealing the flow cookie's hash, a random flow ID and the sign-in request (10
//     minutes). The OIDC nonce and the PKCE verifier are HMACs of the flow cookie and the
//     flow ID under a key derived from shared_secret. Nothing is stored.
//  3. paths.IDPCallback opens the state and checks the flow cookie (a state started in
//     another browser is refused, and the refusal spends nothing), exchanges the code with
//     the derived verifier and nonce, marks the flow ID used (a one-time "idp-state-used"
//     record, written only after the provider redeemed the code; a callback whose flow ID
//     is marked is refused), creates the store.Session (IDP tokens sealed), and sets
//     _gateway_authn (on /.gateway/authenticate/ only: it signs the browser in on every
//     route host, so no other request may carry it).
//  4. The authenticate host stores a one-time "handoff" code (60 s) naming the session,
//     the route host and the pre-session nonce hash, and redirects to the route host's
//     paths.Handoff?code=….
//  5. The route host looks the code up, checks it was minted for this host and that the
//     browser holds the pre-session nonce, and only then spends it (store.GetOneTime, then
//     the atomic TakeOneTime): a refused attempt, from another browser or on another host,
//     leaves the code to the browser it was minted for, and of concurrent attempts (on any
//     replica) exactly one wins. It creates a store.BrowserCookie bound to the host,
//     sets checkapi.SessionCookie (HttpOnly, SameSite=Lax, Secure on https, host-only;
//     Path=/ on hosts with mcp.client or plain routes, Path=/.gateway/ on hosts that serve
//     only mcp.server routes, so the cookie never travels to an MCP server upstream) and
//     redirects to return_to.
//
// Cookies hold opaque random tokens; the store keeps only their SHA-256. Nothing a browser
// does before the provider has signed it in writes to the store (state.go explains why the
// sealed states are as strong as the stored ones were).
package session
