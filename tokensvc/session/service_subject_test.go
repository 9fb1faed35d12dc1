package session

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/idp"
)

// An identity provider subject of the form of a service identity (client:<id>) is refused at
// sign-in, so that no person can be taken for a pre-registered service client.
func TestCallback_ServiceIdentitySubjectIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.idp.Users["client:ci-agent"] = idp.Identity{Subject: "client:ci-agent", Email: "mallory@example.com"}
	b := e.browser()
	_, at := b.follow(appOrigin + paths.SignIn)
	resp := b.do(http.MethodGet, e.idp.Login(t, at, "client:ci-agent"), nil)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "service identities") {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if sub, _ := b.whoami(appOrigin); sub != "" {
		t.Fatalf("signed in as %q", sub)
	}
}
