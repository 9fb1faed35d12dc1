package idp

import "strings"

// protocolClaims are left out of Identity.Claims: they describe the token, not the user.
var protocolClaims = map[string]bool{"nonce": true, "at_hash": true, "c_hash": true}

// identityFrom builds an Identity from merged claims.
func identityFrom(claims map[string]any) Identity {
	id := Identity{Claims: make(map[string]any, len(claims))}
	for k, v := range claims {
		if !protocolClaims[k] {
			id.Claims[k] = v
		}
	}
	id.Subject, _ = claims["sub"].(string)
	if email, _ := claims["email"].(string); email != "" && !explicitlyFalse(claims["email_verified"]) {
		id.Email = email
	} else {
		// An address the provider does not vouch for must not reach claim/email policy
		// criteria either: anyone can register someone else's address at such a provider.
		delete(id.Claims, "email")
	}
	id.Name, _ = claims["name"].(string)
	if id.Name == "" {
		given, _ := claims["given_name"].(string)
		family, _ := claims["family_name"].(string)
		id.Name = strings.TrimSpace(given + " " + family)
	}
	id.Groups = stringList(claims["groups"])
	return id
}

// explicitlyFalse reports whether v is false or "false" (some providers send a string).
func explicitlyFalse(v any) bool {
	switch t := v.(type) {
	case bool:
		return !t
	case string:
		return strings.EqualFold(t, "false")
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
