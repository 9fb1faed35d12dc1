// Package oauth is the token service's OAuth 2.1 authorization server for MCP
// clients. It owns, on every route host that has mcp.server routes:
//
//   - RFC 8414 authorization server metadata (also at the OpenID Connect
//     discovery URL) and RFC 9728 protected resource metadata (path-aware for
//     every path an MCP server route serves, and host-level);
//   - pre-registered clients (mcp_clients, configured.go), RFC 7591 dynamic
//     client registration (with application_type) and client ID metadata
//     documents (URL client IDs, restricted to mcp_allowed_client_id_domains
//     and fetched through an SSRF-guarded HTTP client, with private_key_jwt
//     client authentication against their jwks_uri, assertion.go, jwks.go);
//   - the authorization endpoint with its consent screen (PKCE S256 only,
//     exact redirect URI match with the RFC 8252 loopback port exception,
//     RFC 8707 resource binding, RFC 9207 iss in every response);
//   - RFC 8707 resource indicators resolved as the data path matches routes
//     (resource.go) and one scope, mcp (scope.go);
//   - the token endpoint (authorization_code, refresh_token, and
//     client_credentials for service identities, service.go; every
//     client authentication method verified, single-use codes, refresh token
//     rotation with reuse detection, session revalidation with the identity
//     provider when the browser session has expired);
//   - RFC 7009 revocation;
//   - [Server.ValidateAccessToken] and [Server.IssueClientToken] for the check
//     API and the session package.
//
// Each route host is its own issuer: the issuer is the host's configured
// origin ([hosts.Host].Origin), never a value taken from Host or X-Forwarded-*
// headers. The user's browser session comes from the consumer-owned
// [Sessions] interface, implemented by package session.
//
// # Why a focused implementation rather than ory/fosite or zitadel/oidc
//
// docs/architecture.md (rule 10) asks to weigh a framework before writing the core by hand. We
// weighed ory/fosite and zitadel/oidc/v3/pkg/op and chose a focused
// implementation on our own store, built from primitives (crypto/rand,
// crypto/sha256, crypto/subtle through package secret, net/url, html/template,
// encoding/json); golang.org/x/oauth2 and the MCP Go SDK serve as independent
// client oracles in the tests. The reasons:
//
//   - Storage. fosite and op each bring their own storage interfaces (fosite:
//     a dozen session/requester stores serialising fosite.Requester; op: an
//     OIDC-shaped Storage). Our [store.Store] already expresses exactly the
//     guarantees the threat model needs — hashed tokens only, atomic
//     single-use codes (TakeAuthCode), refresh-token families with reuse
//     detection inside one atomic RotateRefreshToken, session-bound grants
//     that die with sign-out — across memory, SQLite and PostgreSQL. Adapting
//     either framework would put a translation layer exactly where the
//     atomicity guarantees live.
//   - MCP specifics are outside both frameworks or need overriding there:
//     client ID metadata documents with a domain allowlist and SSRF defences,
//     RFC 8707 resource binding to one MCP server route, RFC 9207 iss,
//     per-route-host issuers resolved from configuration (op derives the
//     issuer from the request Host, which the threat model forbids), the
//     loopback-only port exception, and session revalidation with the
//     identity provider on refresh. Most of the work would be overrides.
//   - Dependencies and surface. fosite is not in go.mod and pulls in a large
//     tree (ory/x, its own go-jose fork, telemetry); op is OIDC-first (ID
//     tokens, userinfo, discovery) which this server does not offer. The
//     subset we need — code+PKCE, refresh, DCR, revocation — is small, and a
//     small audited implementation is easier to reason about than a framework
//     configured to switch most of itself off.
//
// # Decisions worth knowing
//
//   - Tokens, codes, refresh tokens, client secrets and consent handles are
//     32 random bytes (secret.NewToken); only their SHA-256 is stored.
//   - An authorization code is single-use (atomic TakeAuthCode) and lives
//     60 seconds. A redeemed code is remembered for 10 minutes; presenting it
//     again revokes the grant and access token it yielded (RFC 6749 §4.1.2).
//   - One-time values are checked, then spent: the token endpoint looks at a
//     code (GetAuthCode) and verifies its client, redirect URI, PKCE verifier,
//     issuer and resource before taking it; the consent endpoint looks at a
//     pending consent (GetOneTime) and verifies its session, issuer and the
//     answer before taking it. A refused attempt (invalid_grant, or the error
//     page) leaves the value to the one it is bound to; the take is still the
//     single atomic step, so concurrent redemptions yield one success.
//   - A refresh token is always rotated. Presenting a rotated one revokes its
//     whole grant and the grant's access tokens. Two concurrent refreshes with
//     the same token therefore end the family; clients must serialise refresh.
//   - The grant's lifetime (refresh_token_lifetime) is absolute from the
//     first authorization; an access token never outlives its grant nor the
//     browser session it was issued in, so identity is re-checked with the
//     identity provider (Sessions.Revalidate) at least once per
//     cookie_expiration while a client keeps refreshing.
//   - A token request may narrow an unbound code or grant to one MCP server
//     (resource) of the issuing host; it can never widen or change a bound
//     one. A resource names the route that serves it, the longest from on a
//     segment boundary (resource.go); the bare origin names the route whose
//     from it is, or else every MCP server route of that host. The host-level
//     protected resource metadata (/.well-known/oauth-protected-resource
//     without a path) names the origin, as RFC 9728 §3.3 requires and strict
//     clients (the MCP Go SDK) check.
//   - Clients are global across issuers (the store has no issuer column).
//     Codes and grants bound to a resource are only redeemable at the issuer
//     that serves the resource; unbound tokens are valid at every route by
//     design (docs/architecture.md, rule 12), so no issuer binding is needed for them.
//   - Authorization errors are redirected to the client only when its
//     redirect URI is vouched for. Until client_id and redirect_uri are
//     verified, always the error page. After that, for an operator-configured
//     (store.ClientStatic) client, errors go to its redirect URI as RFC 6749
//     §4.1.2.1 says. A dynamically registered or metadata-document client was
//     set up by anyone, so errors before consent (bad response_type, missing
//     PKCE, invalid resource, prompt=none…) show the error page with the
//     request ID instead (RFC 9700 §4.11.2): the gateway is no open
//     redirector. Once the user has seen the consent page, which names the
//     redirect host, errors (access_denied) go back to the client. prompt=none
//     for such a client redirects (consent_required) only if the user holds a
//     live grant of it in this session; otherwise the page says nothing about
//     whether the user is signed in. Consent itself is not remembered.
//   - Dynamic client registration is open to anyone and each registration is
//     stored for up to 30 idle days, so it is bounded in size (body 16 KiB,
//     10 redirect URIs of 2000 bytes, name 200 characters, scope 1000 bytes)
//     and rate limited per replica, per caller and route host
//     (WithCallerRegistrationLimit) and per route host
//     (WithRegistrationLimit); 429 with Retry-After beyond. The caller is the
//     peer address, an IPv6 one reduced to its /64; X-Forwarded-For counts
//     only with token_service.trusted_proxy_hops (WithTrustedProxyHops), as
//     a forged header would otherwise buy a fresh budget per request. The
//     budgets of at most 10000 callers are kept, least recently seen
//     forgotten first, so a caller with very many addresses can still reset
//     its own budget: the per-host limit is what bounds the store then.
//   - The consent page's Content-Security-Policy has no form-action
//     directive (the other pages have form-action 'self'): Chrome and Safari
//     apply form-action to the redirects that follow a form submission, so it
//     would block the 303 back to the client and any onward redirect of an
//     https callback to the client's app scheme. See pages.go.
//   - Events (WithEvents) is told of tokens issued and refreshed, refresh
//     token reuse, authorization code replay, each registration's outcome and
//     each client ID metadata document fetch (cache misses only) with its
//     outcome. The package imports no metrics library; the token service's
//     metrics implement Events (package obs). Events are called synchronously
//     on the request path and must not block.
package oauth
