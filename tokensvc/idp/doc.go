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
//
// # Email addresses
//
// The email claim is identity (policy email and domain criteria, claim/email, the
// assertion's email) only when the provider vouches for it: email_verified is JSON true or
// the string "true" in any case (Apple and some Cognito pools send a string). Any other value
// drops the address from Identity.Email and Identity.Claims. When the claim is absent the
// address is dropped too, unless the provider's entry in the provider table (config.Provider,
// which New reads) says it verifies every address it issues and never sends the claim
// (EmailVerifiedWithoutClaim). No built-in provider says so: the generic oidc provider,
// google, gitlab, apple, auth0, cognito, okta, onelogin and ping send the claim, and azure
// (Entra ID) does not send it and may issue addresses nobody verified. The address and its
// verification come from one source: userinfo's email_verified counts for the ID token's
// address only when userinfo names the same address.
package idp
