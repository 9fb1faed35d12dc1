package config

import "sort"

// Provider is what the gateway knows of one idp_provider value: one row of the provider
// table, which both the validation of a configuration and the token service's connector
// constructor (tokensvc/idp) read, so that a provider either passes validation and signs
// users in, or is refused at start-up naming the key (exit 2). docs/idp/ has one page per
// row.
type Provider struct {
	// Name is the idp_provider value.
	Name string
	// Protocol is ProtocolOIDC (OpenID Connect discovery, ID tokens) or ProtocolGitHub
	// (plain OAuth 2.0 and GitHub's REST API).
	Protocol string
	// Issuer is the provider's OpenID issuer (for github: its web origin), used when
	// idp_provider_url is empty; empty means idp_provider_url is required (the issuer
	// depends on the tenant, domain or pool) and IssuerExample shows its shape.
	Issuer        string
	IssuerExample string
	// IssuerTemplate says the discovered issuer may be a multi-tenant template holding
	// "{tenantid}" (azure's common and organizations endpoints): a token is accepted only
	// when its iss is the template with the token's own tid filled in.
	IssuerTemplate bool
	// Unavailable, when set, says why this gateway cannot sign users in with the provider:
	// validation refuses it with this text.
	Unavailable string
	// Claims name the claims that give the identity's subject, email, name and groups.
	Claims ClaimNames
	// DefaultScopes replace the generic default idp_scopes (github, which is not an OpenID
	// provider); nil means openid, profile, email, offline_access.
	DefaultScopes []string
	// NoOfflineAccess leaves offline_access out of the default idp_scopes (cognito does not
	// support it).
	NoOfflineAccess bool
	// RequestParams are the default idp_request_params; MergeRequestParams says that
	// idp_request_params add to them instead of replacing them (apple).
	RequestParams      map[string]string
	MergeRequestParams bool
	// NameFromUserParam says the user's name arrives once, on the first sign-in, as the
	// form_post callback's "user" field (apple) rather than in a claim.
	NameFromUserParam bool
	// EmailVerifiedWithoutClaim says the provider verifies every address it issues and never
	// sends email_verified, so an address without the claim is trusted. When false (every
	// built-in provider: they send the claim, or may issue addresses nobody verified) an
	// address is trusted only with email_verified true (docs/decisions.md).
	EmailVerifiedWithoutClaim bool
	// NoRefreshToken says the provider never issues a refresh token (github): sessions are
	// re-validated with the stored access token instead.
	NoRefreshToken bool
	// RefreshWithoutScope says the provider issues refresh tokens without the offline_access
	// scope (apple, cognito, gitlab): a sign-in without one is then worth a warning whatever
	// the scopes.
	RefreshWithoutScope bool
	// RefreshFix is what to change when a sign-in returns no refresh token although
	// offline_access was requested: the warning logged at sign-in names it.
	RefreshFix string
	// GroupsHint says what the operator sets so that the provider sends groups.
	GroupsHint string
}

// ClaimNames are the claims of a provider's ID token or userinfo that give an identity.
type ClaimNames struct {
	Subject, Email, Name, Groups string
}

// Protocols of Provider.Protocol.
const (
	ProtocolOIDC   = "oidc"
	ProtocolGitHub = "github"
)

// GitHubIssuer is github.com's web origin: idp_provider_url for GitHub Enterprise Server is
// the origin of that server instead.
const GitHubIssuer = "https://github.com"

var standardClaims = ClaimNames{Subject: "sub", Email: "email", Name: "name", Groups: "groups"}

const consentFix = "add prompt=consent to idp_request_params (OpenID Connect Core 11: a provider may keep offline_access only with consent), or allow refresh tokens for the client at the provider"

// providers returns the provider table (docs/idp/README.md lists it).
func providers() map[string]Provider {
	return map[string]Provider{
		"apple": {
			Name: "apple", Protocol: ProtocolOIDC, Issuer: "https://appleid.apple.com",
			Claims:        ClaimNames{Subject: "sub", Email: "email"},
			RequestParams: map[string]string{"response_mode": "form_post"}, MergeRequestParams: true,
			NameFromUserParam: true, RefreshWithoutScope: true,
			RefreshFix: "Apple returns a refresh token on every code redemption; check that the client secret JWT is valid and not expired",
			GroupsHint: "Apple sends no groups",
		},
		"auth0": {
			Name: "auth0", Protocol: ProtocolOIDC, IssuerExample: "https://<tenant>.<region>.auth0.com/",
			Claims:     standardClaims,
			RefreshFix: "enable Allow Offline Access on the Auth0 API and the Refresh Token grant on the application",
			GroupsHint: "add a groups claim with an Auth0 Action (post-login)",
		},
		"azure": {
			Name: "azure", Protocol: ProtocolOIDC, IssuerExample: "https://login.microsoftonline.com/<tenant-id>/v2.0",
			IssuerTemplate: true,
			Claims:         standardClaims,
			RequestParams:  map[string]string{"prompt": "select_account"},
			RefreshFix:     "keep offline_access in idp_scopes and grant it in the app registration's API permissions",
			GroupsHint:     "set groupMembershipClaims in the app registration's manifest (token configuration, groups claim)",
		},
		"cognito": {
			Name: "cognito", Protocol: ProtocolOIDC, IssuerExample: "https://cognito-idp.<region>.amazonaws.com/<user-pool-id>",
			Claims:          ClaimNames{Subject: "sub", Email: "email", Name: "name", Groups: "cognito:groups"},
			NoOfflineAccess: true, RefreshWithoutScope: true,
			RefreshFix: "Cognito returns a refresh token only to an app client with the refresh token flow (ALLOW_REFRESH_TOKEN_AUTH) enabled",
			GroupsHint: "Cognito sends user pool groups as cognito:groups; nothing to set",
		},
		"github": {
			Name: "github", Protocol: ProtocolGitHub, Issuer: GitHubIssuer,
			Claims:         ClaimNames{Subject: "id", Email: "email", Name: "name", Groups: "groups"},
			DefaultScopes:  []string{"read:user", "user:email", "read:org"},
			NoRefreshToken: true,
			RefreshFix:     "GitHub OAuth apps issue no refresh token: sessions are re-validated with the stored access token until GitHub refuses it",
			GroupsHint:     "keep read:org in idp_scopes and grant the OAuth app access to the organisation",
		},
		"gitlab": {
			Name: "gitlab", Protocol: ProtocolOIDC, Issuer: "https://gitlab.com",
			Claims: standardClaims, RefreshWithoutScope: true,
			RefreshFix: "GitLab issues refresh tokens to every application; check the application's scopes include openid",
			GroupsHint: "GitLab sends groups at userinfo for the openid scope; nothing to set",
		},
		"google": {
			Name: "google", Protocol: ProtocolOIDC, Issuer: "https://accounts.google.com",
			Claims:        ClaimNames{Subject: "sub", Email: "email", Name: "name"},
			RequestParams: map[string]string{"prompt": "select_account consent"},
			RefreshFix:    "Google refreshes only with access_type=offline: set idp_request_params to {prompt: select_account consent, access_type: offline} (and drop offline_access from idp_scopes if Google refuses it)",
			GroupsHint:    "Google sends no groups claim",
		},
		"hosted": {Name: "hosted", Unavailable: "the hosted authenticate service is not available in this gateway; configure your own provider"},
		"oidc": {
			Name: "oidc", Protocol: ProtocolOIDC, IssuerExample: "https://idp.example.com",
			Claims: standardClaims, RefreshFix: consentFix,
			GroupsHint: "add the scope that releases the groups claim (often groups) to idp_scopes",
		},
		"okta": {
			Name: "okta", Protocol: ProtocolOIDC, IssuerExample: "https://<org>.okta.com/oauth2/default",
			Claims:     standardClaims,
			RefreshFix: "enable the Refresh Token grant type on the Okta application and allow offline_access in the authorization server's access policy",
			GroupsHint: "add a groups claim to the authorization server (or the groups scope) and add groups to idp_scopes",
		},
		"onelogin": {
			Name: "onelogin", Protocol: ProtocolOIDC, IssuerExample: "https://<subdomain>.onelogin.com/oidc/2",
			Claims:     standardClaims,
			RefreshFix: "set the application's token endpoint authentication to POST or Basic and enable refresh tokens in its SSO settings",
			GroupsHint: "add groups to idp_scopes and map the groups parameter in the application",
		},
		"ping": {
			Name: "ping", Protocol: ProtocolOIDC, IssuerExample: "https://auth.pingone.com/<environment-id>/as",
			Claims:     standardClaims,
			RefreshFix: "add the Refresh Token grant type to the PingOne application",
			GroupsHint: "add a groups attribute mapping (memberOfGroupNames) to the application",
		},
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
