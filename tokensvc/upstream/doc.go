// Package upstream owns upstream OAuth (integration patterns 2 and 3,
// docs/pattern-2-upstream-oauth.md): the connect flow that obtains a user's Internal Token
// (TI) from an mcp.server route's upstream_oauth2 provider, the TI store (sealed per user and
// route), its refresh, and disconnect.
//
// On an upstream_discovery route (docs/upstream-discovery.md) the provider is found rather
// than configured (upstreamAS, upstream_as.go): discover.go probes the upstream and reads its
// protected-resource and authorization server metadata through the netguard client, within
// mcp_allowed_upstream_domains, and caches them per HTTP caching; register.go registers in
// the MCP specification's order (configured client, the client ID metadata document served
// at paths.UpstreamClientMetadata, dynamic registration stored in store.UpstreamClients);
// every authorization, exchange and refresh then carries the discovered resource. A
// discovery or registration failure is a 502 page naming the step (DiscoveryError). An
// authorization request asking for scopes beyond the gateway's own is a step-up: the route
// its resource names connects again if its TI lacks them (BeforeCode). A discovered flow is
// bound to its issuer: the callback sends the code, and a refresh the refresh token, to the
// authorization server that issued them and to no other the upstream names later.
//
//   - paths.Connect (GET ?redirect_url=…[&route=…]) on an mcp.server route host: redirect_url
//     must be on the origin of an mcp.client route (CheckRedirectURL), else a 400 page and
//     never a redirect. A browser without a session signs in first. It runs the
//     authorization-code flow (PKCE S256, scopes) of every upstream route of the host the
//     user's policy allows and that has no usable TI (or of route=), one after the other,
//     then redirects to redirect_url.
//   - The state is a random value whose hash keys a one-time store record naming the
//     browser session, the host, the route and the rest of the chain; the PKCE verifier is
//     an HMAC of the state. paths.UpstreamCallback checks the session before it spends the
//     state, checks RFC 9207 iss, exchanges the code (auth_style header: HTTP Basic; params:
//     client credentials in the body; unset: Basic, then the body on invalid_client) and
//     stores the TI.
//   - paths.Disconnect: GET shows a confirmation form; its POST (CSRF token bound to the
//     session cookie, Sec-Fetch-Site/Origin same-origin) deletes the TIs.
//   - Service.Token (check.UpstreamTokens) hands the TI to the check API and refreshes it
//     RefreshMargin before it expires: once per process (one flight per user and route) and
//     once across replicas (store.UpstreamLeases). A rotated refresh token is stored back;
//     invalid_grant deletes the TI (the user must connect again); other failures keep the
//     old TI while it is valid.
//   - Service.BeforeCode (oauth.Upstream) chains the connect flow into the authorization
//     flow of MCP clients (pattern 2).
//
// Calls to token endpoints are bounded (CallTimeout, MaxResponseBytes), follow no redirects,
// and their errors name the endpoint, the status and a registered OAuth error code only:
// never the response body, a token or the client secret.
package upstream
