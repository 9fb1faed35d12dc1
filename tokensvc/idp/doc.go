// Package idp signs users in at the identity provider. It owns the Connector interface the
// session manager uses (authorization URL, code exchange, refresh) and its two
// implementations, both driven by the provider's row of the provider table
// (config.Provider, docs/idp/):
//
//   - OIDC, for the ten OpenID providers, on github.com/coreos/go-oidc/v3 and
//     golang.org/x/oauth2: discovery from the issuer (lazy, retried, so the token service
//     starts while the provider is down; the discovered issuer must be the configured one, or
//     for azure a {tenantid} template checked against each token's tid), PKCE S256, ID token
//     verification (signature, issuer, audience, expiry, nonce), userinfo merged into the
//     claims, the row's claims for subject, email, name and groups (cognito:groups), apple's
//     name from the form_post "user" field (WithUserParam), a warning naming the row's fix when
//     no refresh token comes back, and refresh that reports a provider's refusal as ErrRefused
//     and hands back a rotated refresh token for the caller to store.
//   - GitHub, plain OAuth 2.0 and the REST API (github.go), for github.com and GitHub
//     Enterprise Server; githubtest is a GitHub-compatible server for its tests.
//
// Both track the provider's health (health.go): a sign-in while the provider does not answer,
// at start-up or later, fails with ErrUnavailable (the 503 page) instead of redirecting the
// browser to it.
//
// New selects the connector for cfg.IDPProvider; a problem with the settings is a
// *config.Error (the commands exit 2).
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
