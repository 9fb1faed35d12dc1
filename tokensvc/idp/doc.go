// Package idp signs users in at the identity provider. It owns the Connector interface the
// session manager uses (authorization URL, code exchange, refresh) and its OpenID Connect
// implementation on github.com/coreos/go-oidc/v3 and golang.org/x/oauth2: discovery from
// idp_provider_url (lazy, retried, so the token service starts while the provider is down),
// PKCE S256, ID token verification (signature, issuer, audience, expiry, nonce), userinfo
// merged into the claims, and refresh that reports a provider's refusal as ErrRefused and
// hands back a rotated refresh token for the caller to store.
//
// New selects the connector for cfg.IDPProvider. The OIDC-compliant built-in providers use
// their well-known issuer when idp_provider_url is empty (google, gitlab, apple); the others
// require it. github, which is not an OpenID provider, is not supported yet.
package idp
