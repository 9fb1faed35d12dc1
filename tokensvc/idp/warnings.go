package idp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"golang.org/x/oauth2"
)

// warnings logs what a sign-in's answer says about the configuration: no refresh token
// although one was asked for (every MCP session then ends at cookie_expiration), and azure's
// groups overage (the user is in more groups than fit in a token).
func (c *OIDC) warnings(ctx context.Context, tok *oauth2.Token, claims map[string]any) {
	if tok.RefreshToken == "" && c.wantsRefreshToken() {
		c.opts.logger.WarnContext(ctx, "the identity provider issued no refresh token: MCP sessions will end at cookie_expiration",
			"provider", c.provider.Name, "fix", c.provider.RefreshFix)
	}
	if names, ok := claims["_claim_names"].(map[string]any); ok {
		if _, over := names["groups"]; over {
			c.opts.logger.WarnContext(ctx, "groups overage: the provider sent no groups because the user is in too many; groups policy criteria will not match (docs/idp/azure.md)",
				"provider", c.provider.Name)
		}
	}
}

// wantsRefreshToken reports whether the sign-in asked for a refresh token, or is at a
// provider that issues one without being asked.
func (c *OIDC) wantsRefreshToken() bool {
	if c.provider.RefreshWithoutScope {
		return true
	}
	for _, s := range c.scopes {
		if s == "offline_access" {
			return true
		}
	}
	return c.params["access_type"] == "offline"
}

// getJSON GETs url (with a bearer token when token is set) and decodes a 200 answer into v.
func getJSON(ctx context.Context, client *http.Client, url, token string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("%s: %v", url, err)
	}
	return nil
}
