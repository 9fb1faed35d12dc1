package upstream

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/hosts"
)

// FuzzParseTokenResponse: whatever a token endpoint answers, the parser does not panic, a
// token it accepts is visible ASCII within bounds, and an error names no part of the body.
func FuzzParseTokenResponse(f *testing.F) {
	f.Add(200, "application/json", `{"access_token":"a","token_type":"Bearer","expires_in":3600,"refresh_token":"r","scope":"x y"}`)
	f.Add(200, "application/json", `{"access_token":"a","expires_in":"60"}`)
	f.Add(400, "application/json", `{"error":"invalid_grant","error_description":"nope"}`)
	f.Add(200, "application/json", `{"error":"bad_verification_code"}`)
	f.Add(200, "application/x-www-form-urlencoded", `access_token=a&token_type=bearer&scope=repo`)
	f.Add(200, "application/json", `{"access_token":"a"} {}`)
	f.Add(200, "application/json", `{"access_token":"a\u0000b"}`)
	f.Add(200, "text/html", `<html>`)
	f.Add(500, "", ``)
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, status int, contentType, body string) {
		tok, err := ParseTokenResponse("https://up.example.com/token", status, contentType, []byte(body), now)
		if err != nil {
			te, ok := err.(*TokenError)
			if !ok {
				t.Fatalf("error of type %T", err)
			}
			if te.Code != "" && te.Code != "unregistered" && !registeredErrors[te.Code] {
				t.Fatalf("unregistered code %q reported", te.Code)
			}
			return
		}
		if status != 200 || tok.AccessToken == "" || !printable(tok.AccessToken, false) || len(tok.AccessToken) > maxTokenLen {
			t.Fatalf("accepted %+v from status %d", tok, status)
		}
		if tok.RefreshToken != "" && !printable(tok.RefreshToken, false) {
			t.Fatalf("accepted refresh token %q", tok.RefreshToken)
		}
		if !tok.Expiry.IsZero() && !tok.Expiry.After(now) {
			t.Fatalf("expiry %v not after now", tok.Expiry)
		}
	})
}

// FuzzCheckRedirectURL: an accepted redirect_url is an absolute http(s) URL whose origin is
// a configured mcp.client origin, and the URL returned parses to that same origin.
func FuzzCheckRedirectURL(f *testing.F) {
	for _, s := range []string{
		"https://app.example.com/after", "https://app.example.com.evil.com/", "https://app.example.com@evil.com/",
		"//app.example.com/", "https://app.example.com\\@evil.com", "HTTPS://APP.EXAMPLE.COM/", "https://app.example.com:443/",
		"https://[::1]/", "http://app.example.com:8080/x?y#z", "https://app.example.com%2f@evil.com/",
	} {
		f.Add(s)
	}
	origins := map[string]bool{"https://app.example.com": true, "http://app.example.com:8080": true}
	f.Fuzz(func(t *testing.T, raw string) {
		out, ok := CheckRedirectURL(raw, origins)
		if !ok {
			return
		}
		u, err := url.Parse(out)
		if err != nil || u.User != nil || u.Opaque != "" {
			t.Fatalf("%q accepted as %q", raw, out)
		}
		if !origins[u.Scheme+"://"+hosts.Normalize(u.Host, u.Scheme)] || !strings.HasPrefix(out, u.Scheme+"://"+u.Host+"/") {
			t.Fatalf("%q accepted as %q, origin %s://%s", raw, out, u.Scheme, u.Host)
		}
		if strings.ContainsAny(out, "\\\t\r\n ") {
			t.Fatalf("%q accepted as %q", raw, out)
		}
	})
}

// FuzzCheckIssuer: with issuer configured only that exact value passes; without, only an iss
// on auth_url's origin (or none).
func FuzzCheckIssuer(f *testing.F) {
	f.Add("https://idp.example.com", true, "", "https://idp.example.com/authorize")
	f.Add("https://evil.example.com", true, "", "https://idp.example.com/authorize")
	f.Add("https://idp.example.com/tenant", true, "https://idp.example.com/tenant", "https://idp.example.com/authorize")
	f.Add("", false, "https://idp.example.com", "https://idp.example.com/authorize")
	f.Fuzz(func(t *testing.T, iss string, has bool, issuer, authURL string) {
		if !CheckIssuer(iss, has, issuer, authURL) {
			return
		}
		if issuer != "" && (!has || iss != issuer) {
			t.Fatalf("iss %q passed with issuer %q", iss, issuer)
		}
		if issuer == "" && has {
			u, _ := url.Parse(iss)
			a, _ := url.Parse(authURL)
			if u == nil || a == nil || u.Scheme != a.Scheme || hosts.Normalize(u.Host, u.Scheme) != hosts.Normalize(a.Host, a.Scheme) {
				t.Fatalf("iss %q passed for auth_url %q", iss, authURL)
			}
		}
	})
}
