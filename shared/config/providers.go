package config

import "sort"

// Provider is what the gateway knows of one idp_provider value: the one table that both the
// validation of a configuration and the token service's connector constructor read, so that a
// provider either passes validation and signs users in, or is refused at start-up naming the
// key (exit 2).
type Provider struct {
	// Name is the idp_provider value.
	Name string
	// Issuer is the provider's OpenID issuer, used when idp_provider_url is empty; empty means
	// idp_provider_url is required (the issuer depends on the tenant, domain or pool).
	Issuer string
	// Unavailable, when set, says why this gateway cannot sign users in with the provider:
	// validation refuses it with this text.
	Unavailable string
	// NoOfflineAccess leaves offline_access out of the default idp_scopes (cognito does not
	// support it; docs/configuration.md).
	NoOfflineAccess bool
	// RequestParams are the default idp_request_params (docs/configuration.md); MergeRequestParams says that
	// idp_request_params add to them instead of replacing them (apple).
	RequestParams      map[string]string
	MergeRequestParams bool
	// EmailVerifiedWithoutClaim says the provider verifies every address it issues and never
	// sends email_verified, so an address without the claim is trusted. When false (every
	// built-in provider: they send the claim, or may issue addresses nobody verified) an
	// address is trusted only with email_verified true (docs/decisions.md).
	EmailVerifiedWithoutClaim bool
}

// providers returns the table of idp_provider values (docs/configuration.md lists them).
func providers() map[string]Provider {
	return map[string]Provider{
		"apple":    {Name: "apple", Issuer: "https://appleid.apple.com", RequestParams: map[string]string{"response_mode": "form_post"}, MergeRequestParams: true},
		"auth0":    {Name: "auth0"},
		"azure":    {Name: "azure", RequestParams: map[string]string{"prompt": "select_account"}},
		"cognito":  {Name: "cognito", NoOfflineAccess: true},
		"github":   {Name: "github", Unavailable: "github is not supported yet (it is not an OpenID Connect provider); use oidc with an OpenID Connect provider"},
		"gitlab":   {Name: "gitlab", Issuer: "https://gitlab.com"},
		"google":   {Name: "google", Issuer: "https://accounts.google.com", RequestParams: map[string]string{"prompt": "select_account consent"}},
		"hosted":   {Name: "hosted", Unavailable: "the hosted authenticate service is not available in this gateway; configure your own provider"},
		"oidc":     {Name: "oidc"},
		"okta":     {Name: "okta"},
		"onelogin": {Name: "onelogin"},
		"ping":     {Name: "ping"},
	}
}

// LookupProvider returns the table entry of idp_provider name.
func LookupProvider(name string) (Provider, bool) {
	p, ok := providers()[name]
	return p, ok
}

// ProviderNames returns every idp_provider value, sorted.
func ProviderNames() []string {
	table := providers()
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
