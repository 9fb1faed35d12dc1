package plugintest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/mcpmesh/gateway/shared/checkapi"
)

// Cluster and FilterKey are the token service cluster and key of Config.
const (
	Cluster   = "gateway-tokensvc"
	FilterKey = "test-filter-key"
	RequestID = "req-7f3a"
	// MaxParameterBytes is Config's authorize_log_max_parameter_bytes.
	MaxParameterBytes = 1024
)

// Hosts of Config besides mcp.example.com (the recommended policy: example.com users, tools
// echo and add only), tiny.example.com (the same with a 100-byte body limit), up.example.com
// (upstream OAuth), pitfall.example.com (mcp_tool under allow) and app.example.com (a client
// route).
const (
	// SharedHost carries a plain route at "/", a stricter plain route at "/admin" (only
	// admin@example.com) and an MCP server route at "/mcp" with the recommended policy.
	SharedHost = "shared.example.com"
	// OpenHost carries two MCP server routes, "/mcp" and "/other", that let every signed-in
	// user call any tool but delete_everything (a deny list).
	OpenHost = "open.example.com"
)

// Config is the plugin configuration every case, benchmark and test of the filter runs with.
func Config() []byte {
	recommended := map[string]any{
		"allow": map[string]any{"and": []any{map[string]any{"domain": map[string]any{"is": "example.com"}}}},
		"deny":  map[string]any{"and": []any{map[string]any{"mcp_tool": map[string]any{"not_in": []any{"echo", "add"}}}}},
	}
	authenticated := map[string]any{"allow": map[string]any{"and": []any{map[string]any{"authenticated_user": true}}}}
	pitfall := map[string]any{"allow": map[string]any{"and": []any{map[string]any{"mcp_tool": map[string]any{"is": "echo"}}}}}
	adminOnly := map[string]any{"allow": map[string]any{"and": []any{map[string]any{"email": map[string]any{"is": "admin@example.com"}}}}}
	denyList := map[string]any{
		"allow": map[string]any{"and": []any{map[string]any{"authenticated_user": true}}},
		"deny":  map[string]any{"and": []any{map[string]any{"mcp_tool": map[string]any{"is": "delete_everything"}}}},
	}
	cfg := map[string]any{
		"token_service_cluster":             Cluster,
		"token_service_authority":           "tokensvc.internal",
		"filter_key":                        FilterKey,
		"check_timeout_ms":                  500,
		"cache_ttl_s":                       30,
		"authenticate_service_url":          "https://auth.example.com",
		"authorize_log_fields":              []string{"request-id", "user", "email", "allow", "allow-why-true", "allow-why-false", "deny", "deny-why-false", "mcp-method", "mcp-tool", "mcp-tool-parameters", "mcp-protocol-version", "mcp-client-name", "mcp-client-version"},
		"authorize_log_max_parameter_bytes": MaxParameterBytes,
		"routes": []any{
			route("https://mcp.example.com/mcp", "mcp.example.com", "/mcp", "server", 4096, false, recommended),
			route("https://tiny.example.com/mcp", "tiny.example.com", "/mcp", "server", 100, false, recommended),
			route("https://up.example.com/mcp", "up.example.com", "/mcp", "server", 4096, true, authenticated),
			route("https://pitfall.example.com/mcp", "pitfall.example.com", "/mcp", "server", 4096, false, pitfall),
			route("https://app.example.com", "app.example.com", "/", "client", 0, false, authenticated),
			route("https://"+OpenHost+"/mcp", OpenHost, "/mcp", "server", 4096, false, denyList),
			route("https://"+OpenHost+"/other", OpenHost, "/other", "server", 4096, false, denyList),
			route("https://"+SharedHost, SharedHost, "/", "plain", 0, false, authenticated),
			route("https://"+SharedHost+"/admin", SharedHost, "/admin", "plain", 0, false, adminOnly),
			route("https://"+SharedHost+"/mcp", SharedHost, "/mcp", "server", 4096, false, recommended),
			with(route("https://"+NoFilterHost+"/mcp", NoFilterHost, "/mcp", "server", 4096, false, recommended), "no_tool_list_filter", true),
			with(route("https://"+ShadowStrictHost+"/mcp", ShadowStrictHost, "/mcp", "server", 4096, false, denyList), "policy_shadow", recommended),
			with(route("https://"+ShadowLaxHost+"/mcp", ShadowLaxHost, "/mcp", "server", 4096, false, recommended), "policy_shadow", authenticated),
			with(route("https://"+PinnedHost+"/mcp", PinnedHost, "/mcp", "server", 4096, false, denyList), "tool_pins", map[string]any{"digests": pinnedDigests()}),
			with(route("https://"+PinWarnHost+"/mcp", PinWarnHost, "/mcp", "server", 4096, false, denyList), "tool_pins", map[string]any{"warn": true, "digests": pinnedDigests()}),
		},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		panic(err)
	}
	return b
}

// Hosts of the tool-list and shadow-policy cases (cases_toollist.go, cases_shadow.go).
const (
	// NoFilterHost is mcp.example.com's route with mcp.server.filter_tool_list: false.
	NoFilterHost = "nofilter.example.com"
	// ShadowStrictHost enforces the deny list of OpenHost with the recommended policy in
	// shadow (stricter: only echo and add, only example.com).
	ShadowStrictHost = "shadow-strict.example.com"
	// ShadowLaxHost enforces the recommended policy with a shadow that allows every
	// signed-in user any tool (laxer).
	ShadowLaxHost = "shadow-lax.example.com"
	// PinnedHost has OpenHost's deny list and pins echo and add as listTools lists them
	// (cases_pins.go); PinWarnHost the same in warn mode.
	PinnedHost  = "pinned.example.com"
	PinWarnHost = "pinwarn.example.com"
)

// with returns r with key set to v.
func with(r map[string]any, key string, v any) map[string]any {
	r[key] = v
	return r
}

func route(id, host, prefix, kind string, max int, upstream bool, policy any) map[string]any {
	r := map[string]any{"id": id, "name": host, "scheme": "https", "host": host, "path_prefix": prefix, "kind": kind, "policy": policy}
	if max > 0 {
		r["max_request_bytes"] = max
	}
	if upstream {
		r["upstream_oauth2"] = true
	}
	return r
}

// Credentials the fake token service knows.
const (
	TokenAlice         = "alice-token"   // alice@example.com, groups engineering
	TokenAlice2        = "alice-token-2" // alice again: a refreshed access token
	TokenBob           = "bob-token"     // bob@other.org
	TokenInvalid       = "revoked-token" // 401 invalid_token
	TokenServiceDown   = "down-token"    // the call fails (no answer)
	TokenGarbage       = "garbage-token" // 200 with a body that is not JSON
	TokenNoUpstream    = "carol-token"   // valid, but no Internal Token on upstream routes
	CookieAlice        = "alice-cookie"
	CookieExpired      = "expired-cookie"
	InternalToken      = "TI-upstream-secret"
	ClientExternalTE   = "TE-for-app-backend"
	AssertionForPrefix = "eyJhbGciOiJFUzI1NiJ9.assertion-for-"
)

// SessionKey is the fake token service's MCP session key of a subject on a route (the real
// one is an HMAC under a key derived from shared_secret; any per-user, per-route key will do).
func SessionKey(sub, routeID string) string {
	sum := sha256.Sum256([]byte("session-key\x00" + sub + "\x00" + routeID))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// CheckAnswer is the fake token service's answer to one check call.
type CheckAnswer struct {
	// Fail means no answer at all (reset, timeout).
	Fail   bool
	Status int
	Body   string
}

// AnswerCheck answers a check call as the token service would for the credentials above.
// It is the single source of truth for both the native and the wasm runs.
func AnswerCheck(key string, body []byte) CheckAnswer {
	if key != FilterKey {
		return CheckAnswer{Status: 401, Body: `{"status":"invalid_key"}`}
	}
	var req checkapi.Request
	if err := json.Unmarshal(body, &req); err != nil {
		return CheckAnswer{Status: 400, Body: `{"error":"bad request"}`}
	}
	ok := func(sub, email string, set func(*checkapi.Response)) CheckAnswer {
		resp := checkapi.Response{
			Status:    checkapi.StatusOK,
			Identity:  &checkapi.Identity{Subject: sub, Email: email, Groups: []string{"engineering"}},
			Assertion: AssertionForPrefix + req.Host,
			ExpiresAt: 4102444800, // 2100-01-01
		}
		if req.Token != "" {
			resp.SessionKey = SessionKey(sub, req.RouteID)
		}
		if set != nil {
			set(&resp)
		}
		return answer(resp)
	}
	upstream := strings.HasPrefix(req.RouteID, "https://up.")
	switch {
	case req.Token == TokenAlice && upstream:
		return ok("alice", "alice@example.com", func(r *checkapi.Response) { r.UpstreamToken = InternalToken })
	case req.Token == TokenAlice, req.Token == TokenAlice2:
		return ok("alice", "alice@example.com", nil)
	case req.Token == TokenBob:
		return ok("bob", "bob@other.org", nil)
	case req.Token == TokenNoUpstream && upstream:
		return answer(checkapi.Response{Status: checkapi.StatusUpstreamRequired, Identity: &checkapi.Identity{Subject: "carol"},
			Error: "invalid_token"})
	case req.Token == TokenServiceDown:
		return CheckAnswer{Fail: true}
	case req.Token == TokenGarbage:
		return CheckAnswer{Status: 200, Body: `<html>proxy error</html>`}
	case req.Cookie == CookieAlice:
		return ok("alice", "alice@example.com", func(r *checkapi.Response) { r.ClientToken = ClientExternalTE })
	case req.Cookie != "":
		return answer(checkapi.Response{Status: checkapi.StatusNoSession})
	}
	return answer(checkapi.Response{Status: checkapi.StatusInvalidToken, Error: "invalid_token"})
}

// answer is resp as the token service sends it: JSON, under the HTTP status of its Status.
func answer(resp checkapi.Response) CheckAnswer {
	b, _ := json.Marshal(resp)
	return CheckAnswer{Status: checkapi.HTTPStatus(resp.Status), Body: string(b)}
}

// okAnswer answers every check call with status ok and fields (a JSON fragment that starts
// with a comma).
func okAnswer(fields string) func(string, []byte) CheckAnswer {
	return func(key string, _ []byte) CheckAnswer {
		if key != FilterKey {
			return CheckAnswer{Status: 401, Body: `{"status":"invalid_key"}`}
		}
		return CheckAnswer{Status: 200, Body: `{"status":"ok"` + fields + `}`}
	}
}

// Fields of okAnswer answers.
const (
	aliceIdentity = `,"identity":{"sub":"alice","email":"alice@example.com"}`
	anAssertion   = `,"assertion":"eyJhbGciOiJFUzI1NiJ9.x.y"`
)
