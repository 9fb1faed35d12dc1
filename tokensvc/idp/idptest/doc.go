// Package idptest is a fake identity provider for the tests of the packages that take an
// idp.Connector (the session manager, the token service's server). Its Connector plays a
// strict provider by default: AuthCodeURL records the flow (state, nonce, PKCE verifier),
// Login plays the user signing in at the provider and returns the callback URL with a
// code, and Exchange redeems that code once, only with the flow's verifier, and answers
// with an identity whose ID token carries the flow's nonce. Fields relax or script the
// provider (codes redeemable more than once, a subject signed in without a login step,
// an unreachable provider, refresh answers and tokens); counters report what happened.
//
// It imports no package of the token service but idp, so any of their tests can use it.
package idptest
