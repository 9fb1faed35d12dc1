package idp

import (
	"strings"

	"github.com/mcpmesh/gateway/shared/config"
)

// protocolClaims are left out of Identity.Claims: they describe the token, not the user.
var protocolClaims = map[string]bool{"nonce": true, "at_hash": true, "c_hash": true}

// identityFrom builds an Identity from merged claims of provider p.
func identityFrom(claims map[string]any, p config.Provider) Identity {
	id := Identity{Claims: make(map[string]any, len(claims))}
	for k, v := range claims {
		if !protocolClaims[k] {
			id.Claims[k] = v
		}
	}
	names := p.Claims
	if names.Subject == "" {
		names.Subject = "sub"
	}
	if names.Email == "" {
		names.Email = "email"
	}
	id.Subject, _ = claims[names.Subject].(string)
	if email, _ := claims[names.Email].(string); email != "" && emailVerified(claims, p) {
		id.Email = email
	} else {
		// An address the provider does not vouch for must not reach claim/email policy
		// criteria either: anyone can register someone else's address at such a provider.
		delete(id.Claims, "email")
	}
	if names.Name != "" {
		id.Name, _ = claims[names.Name].(string)
	}
	if id.Name == "" {
		given, _ := claims["given_name"].(string)
		family, _ := claims["family_name"].(string)
		id.Name = strings.TrimSpace(given + " " + family)
	}
	if names.Groups != "" {
		id.Groups = stringList(claims[names.Groups])
	}
	return id
}

// emailVerified reports whether the provider vouches for the address in claims:
// email_verified is true or "true" in any case (Apple and some Cognito pools send a string);
// absent, only at a provider that verifies every address and never sends the claim. Any other
// value (false, "false", another string, a number, null) is not a verification.
func emailVerified(claims map[string]any, p config.Provider) bool {
	v, ok := claims["email_verified"]
	if !ok {
		return p.EmailVerifiedWithoutClaim
	}
	switch t := v.(type) {
	case bool:
		return t
	case string:
		return strings.EqualFold(t, "true")
	}
	return false
}

// stringList reads a claim that is a string or a list of strings; other elements are
// skipped.
func stringList(v any) []string {
	switch t := v.(type) {
	case string:
		if t == "" {
			return nil
		}
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	case []string:
		return append([]string(nil), t...)
	}
	return nil
}
