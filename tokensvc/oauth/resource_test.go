package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
)

// Hosts of the resource tests, beside those of testConfig: a host whose MCP server route's
// from is the bare origin, with a second MCP server route and a plain route beneath it.
const (
	bareOrigin = "https://bare.example.com"       // mcp.server route, from has no path
	bareAdmin  = "https://bare.example.com/admin" // mcp.server route
	bareStatic = "https://bare.example.com/static"
)

func resourceConfig() *config.Config {
	cfg := testConfig()
	server := func() *config.MCP { return &config.MCP{Server: &config.MCPServer{}} }
	cfg.Routes = append(cfg.Routes,
		config.Route{Name: "Bare MCP", From: bareOrigin, To: "http://bare.internal", MCP: server()},
		config.Route{Name: "Admin MCP", From: bareAdmin, To: "http://admin.internal/mcp", MCP: server()},
		config.Route{Name: "Static", From: bareStatic, To: "http://static.internal"},
	)
	return cfg
}

func TestResource_Resolution(t *testing.T) {
	t.Parallel()
	cfg := resourceConfig()
	table := hosts.NewTable(cfg)
	mcpHost, bareHost := table.Lookup("mcp.example.com"), table.Lookup("bare.example.com")
	cases := []struct {
		name    string
		host    *hosts.Host
		raw     string
		want    string
		problem resourceProblem
	}{
		// A route's from, or beneath it; the longest prefix wins.
		{"route from", mcpHost, resMain, resMain, resourceOK},
		{"MCP URL beneath the route", mcpHost, resMain + "/v1/stream", resMain, resourceOK},
		{"trailing slash", mcpHost, resMain + "/", resMain, resourceOK},
		{"host and scheme case", mcpHost, "HTTPS://MCP.Example.COM/mcp", resMain, resourceOK},
		{"default port", mcpHost, "https://mcp.example.com:443/mcp", resMain, resourceOK},
		{"trailing dot of host", mcpHost, "https://mcp.example.com./mcp", resMain, resourceOK},
		{"bare origin without a bare route: every route of the host", mcpHost, issuer, issuer, resourceOK},
		{"bare origin with slash", mcpHost, issuer + "/", issuer, resourceOK},
		// The repro: a route whose from has no path, and the MCP URL the client was given.
		{"MCP URL under a bare-origin route", bareHost, bareOrigin + "/mcp", bareOrigin, resourceOK},
		{"bare origin names the bare-origin route", bareHost, bareOrigin, bareOrigin, resourceOK},
		{"longer route wins over the bare one", bareHost, bareAdmin + "/x", bareAdmin, resourceOK},
		{"segment boundary: /adminx is the bare route's", bareHost, bareOrigin + "/adminx", bareOrigin, resourceOK},
		// Refusals.
		{"path case is not normalised", mcpHost, issuer + "/MCP", "", resourceNotServer},
		{"path case look-alike of a longer route", bareHost, bareOrigin + "/ADMIN", "", resourceNotServer},
		{"not on a segment boundary", mcpHost, issuer + "/mcpx", "", resourceNotServer},
		{"unknown path", mcpHost, issuer + "/admin", "", resourceNotServer},
		{"plain route beneath a bare MCP route", bareHost, bareStatic + "/file", "", resourceNotServer},
		{"another route host", mcpHost, resSolo, "", resourceOtherHost},
		{"another port", mcpHost, "https://mcp.example.com:8443/mcp", "", resourceOtherHost},
		{"another scheme", mcpHost, "http://mcp.example.com/mcp", "", resourceOtherHost},
		{"look-alike host", mcpHost, "https://mcp.example.com.evil.net/mcp", "", resourceOtherHost},
		{"look-alike prefix host", mcpHost, "https://evilmcp.example.com/mcp", "", resourceOtherHost},
		{"client route host", mcpHost, appOrigin, "", resourceOtherHost},
		{"userinfo", mcpHost, "https://user@mcp.example.com/mcp", "", resourceMalformed},
		{"userinfo look-alike", mcpHost, "https://mcp.example.com@evil.net/mcp", "", resourceMalformed},
		{"query", mcpHost, resMain + "?x=1", "", resourceMalformed},
		{"empty query", mcpHost, resMain + "?", "", resourceMalformed},
		{"fragment", mcpHost, resMain + "#x", "", resourceMalformed},
		{"escape", mcpHost, issuer + "/%6dcp", "", resourceMalformed},
		{"encoded slash", mcpHost, issuer + "/mcp%2f..%2fother", "", resourceMalformed},
		{"dot segment", mcpHost, resMain + "/../other", "", resourceMalformed},
		{"single dot segment", mcpHost, issuer + "/./mcp", "", resourceMalformed},
		{"empty segment", mcpHost, issuer + "//mcp", "", resourceMalformed},
		{"two trailing slashes", mcpHost, resMain + "//", "", resourceMalformed},
		{"backslash", mcpHost, issuer + "\\mcp", "", resourceMalformed},
		{"path parameter", bareHost, bareOrigin + "/admin;x", "", resourceMalformed},
		{"space", mcpHost, resMain + " ", "", resourceMalformed},
		{"relative", mcpHost, "/mcp", "", resourceMalformed},
		{"urn", mcpHost, "urn:mcp", "", resourceMalformed},
		{"other scheme", mcpHost, "ftp://mcp.example.com/mcp", "", resourceMalformed},
		{"empty", mcpHost, "", "", resourceMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, problem := resolveResource(tc.host, tc.raw)
			if got != tc.want || problem != tc.problem {
				t.Errorf("resolveResource(%q) = %q, %q; want %q, %q", tc.raw, got, problem, tc.want, tc.problem)
			}
		})
	}

	t.Run("several values", func(t *testing.T) {
		if got, oerr := resolveResources(mcpHost, []string{resMain, resMain + "/", resMain + "/deeper"}); oerr != nil || got != resMain {
			t.Errorf("same route: %q, %v", got, oerr)
		}
		if _, oerr := resolveResources(mcpHost, []string{resMain, resOther}); oerr == nil || oerr.code != errInvalidTarget {
			t.Errorf("two routes: %v", oerr)
		}
		if _, oerr := resolveResources(mcpHost, []string{issuer, resMain}); oerr == nil || oerr.code != errInvalidTarget {
			t.Errorf("origin and a route: %v", oerr)
		}
		if _, oerr := resolveResources(mcpHost, []string{resMain, resSolo}); oerr == nil || oerr.code != errInvalidTarget {
			t.Errorf("a route and another host: %v", oerr)
		}
	})
}

// TestResource_MCPURLOfBareRouteBindsThatRouteOnly is the openid-client repro: a client sends
// the MCP URL it was given as resource on a route whose from has no path. It gets a token for
// that route, which every other route refuses.
func TestResource_MCPURLOfBareRouteBindsThatRouteOnly(t *testing.T) {
	t.Parallel()
	e := newEnvWithConfig(t, resourceConfig())
	c := e.register(nil)
	sess := e.newSession("alice")
	mcpURL := bareOrigin + "/mcp"
	code, verifier := e.authorizeCodeAt(bareOrigin, c, sess, url.Values{"resource": {mcpURL}})
	f := codeForm(c, code, verifier)
	f.Set("resource", mcpURL)
	tr := tokens(t, e.tokenAt(bareOrigin, c, f))
	ctx := context.Background()
	at, err := e.srv.ValidateAccessToken(ctx, tr.AccessToken, bareOrigin)
	if err != nil || at.Resource != bareOrigin {
		t.Fatalf("at the bare route: %+v, %v", at, err)
	}
	for _, other := range []string{bareAdmin, resMain, resOther, resSolo} {
		if _, err := e.srv.ValidateAccessToken(ctx, tr.AccessToken, other); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("token for %s accepted at %s: %v", mcpURL, other, err)
		}
	}
	// Refreshing with the same resource keeps the binding; another route's is refused.
	rf := refreshForm(tr.RefreshToken)
	rf.Set("resource", bareOrigin+"/mcp/")
	next := tokens(t, e.tokenAt(bareOrigin, c, rf))
	rf = refreshForm(next.RefreshToken)
	rf.Set("resource", bareAdmin)
	wantOAuthError(t, e.tokenAt(bareOrigin, c, rf), 400, errInvalidTarget)
}

// A resource equal to the origin of a host with no bare-origin route is every MCP server
// route of that host, and nothing else.
func TestResource_OriginOfHostWithoutBareRouteCoversItsRoutes(t *testing.T) {
	t.Parallel()
	e := newEnvWithConfig(t, resourceConfig())
	c := e.register(nil)
	sess := e.newSession("alice")
	code, verifier := e.authorizeCode(c, sess, url.Values{"resource": {issuer + "/"}})
	f := codeForm(c, code, verifier)
	f.Set("resource", issuer)
	tr := tokens(t, e.token(c, f))
	ctx := context.Background()
	for _, rt := range []string{resMain, resOther} {
		if _, err := e.srv.ValidateAccessToken(ctx, tr.AccessToken, rt); err != nil {
			t.Errorf("at %s: %v", rt, err)
		}
	}
	for _, rt := range []string{resSolo, bareOrigin, bareAdmin} {
		if _, err := e.srv.ValidateAccessToken(ctx, tr.AccessToken, rt); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("accepted at %s: %v", rt, err)
		}
	}
}

func TestResource_AuthorizeRefusesResourcesNamingSeveralRoutes(t *testing.T) {
	t.Parallel()
	e := newEnvWithConfig(t, resourceConfig())
	c := e.register(nil)
	sess := e.newSession("alice")
	_, challenge := pkce()
	for name, res := range map[string][]string{
		"two routes":        {resMain, resOther},
		"look-alike host":   {"https://mcp.example.com.evil.net/mcp"},
		"other port":        {"https://mcp.example.com:444/mcp"},
		"route and another": {resMain, bareOrigin},
	} {
		t.Run(name, func(t *testing.T) {
			p := authParams(c, challenge)
			p["resource"] = res
			rec := e.get(issuer+paths.Authorize+"?"+p.Encode(), sess.ID)
			// A registered client's errors before consent are shown, not redirected.
			if rec.Code != 400 || rec.Header().Get("Location") != "" {
				t.Fatalf("status %d Location %q", rec.Code, rec.Header().Get("Location"))
			}
			if !strings.Contains(rec.Body.String(), errInvalidTarget) {
				t.Errorf("page does not name invalid_target: %s", rec.Body)
			}
		})
	}
	// Several values naming one route are one resource.
	p := authParams(c, challenge)
	p["resource"] = []string{resMain, resMain + "/", resMain + "/x"}
	consentHandle(t, e.get(issuer+paths.Authorize+"?"+p.Encode(), sess.ID))
}

func TestResource_PathAwareMetadataForEveryServedPath(t *testing.T) {
	t.Parallel()
	e := newEnvWithConfig(t, resourceConfig())
	cases := []struct {
		path, wantResource, wantName string
		wantStatus                   int
	}{
		{"", bareOrigin, "Bare MCP", 200},
		{"/", bareOrigin, "Bare MCP", 200},
		{"/mcp", bareOrigin + "/mcp", "Bare MCP", 200},
		{"/mcp/", bareOrigin + "/mcp", "Bare MCP", 200},
		{"/admin", bareAdmin, "Admin MCP", 200},
		{"/admin/deep", bareAdmin + "/deep", "Admin MCP", 200},
		{"/static", "", "", 404},
		{"/static/x", "", "", 404},
		{"/ADMIN", "", "", 404},
		{"/a/../admin", "", "", 404},
		{"/%61dmin", "", "", 404},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			rec := e.get(bareOrigin+paths.ProtectedResourceMetadata+tc.path, "")
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			if rec.Header().Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type %q", rec.Header().Get("Content-Type"))
			}
			if tc.wantStatus != 200 {
				return
			}
			var m prMetadata
			_ = json.Unmarshal(rec.Body.Bytes(), &m)
			if m.Resource != tc.wantResource || m.ResourceName != tc.wantName || len(m.AuthorizationServers) != 1 || m.AuthorizationServers[0] != bareOrigin {
				t.Errorf("metadata %+v", m)
			}
			// What the metadata names is a resource the token endpoint binds to the route.
			if _, problem := resolveResource(hosts.NewTable(e.cfg).Lookup("bare.example.com"), m.Resource); problem != resourceOK {
				t.Errorf("metadata names %q, which does not resolve: %s", m.Resource, problem)
			}
		})
	}
}
