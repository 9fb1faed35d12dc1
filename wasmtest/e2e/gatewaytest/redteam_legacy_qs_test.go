package gatewaytest

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestRedTeam_LegacySSE_BracketSessionIsBoundToItsUser: the legacy HTTP+SSE transport behind
// an Express app whose query parser is qs (Express 4's default; "extended" in Express 5), as
// in ts-servers.mjs's /legacy/qs. qs reads sessionId[]=X (and sessionId%5B%5D=X,
// sessionId[0]=X) as ["X"], and the usual lookup, String(req.query.sessionId), gives X. Bob,
// with his own token and alice's upstream session ID (which her bound ID carries in clear
// after the tag), must not get a tool to run in her session through any of these spellings.
//
// Today the filter does not take these names for a session parameter (isSessionParam: 9 or 10
// bytes), so the raw ID is forwarded and bob's call runs in alice's session: this test fails.
func TestRedTeam_LegacySSE_BracketSessionIsBoundToItsUser(t *testing.T) {
	s := startStackWith(t, stackOptions{TSServers: true})
	alice := signIn(t, s, s.LegacyURL)
	bob := signInAs(t, s, "bob", s.LegacyURL)
	ls := openLegacy(t, s.LegacyURL+"/qs/sse", s.MCPOrigin, alice.Token.AccessToken)
	var raw string
	for _, ss := range s.TS.Log(t).Sessions {
		if ss.Transport == "legacy-qs" && ss.User == "alice@example.com" {
			raw = ss.ID
		}
	}
	if raw == "" || !strings.HasSuffix(ls.SessionID, "."+raw) {
		t.Fatalf("alice's endpoint carries %q, the upstream's session is %q: want it bound", ls.SessionID, raw)
	}
	// Her own session works (so a refusal below is the binding, not a broken route).
	if r := legacyPost(t, ls.PostURL, alice.Token.AccessToken, "application/json", toolCall(1, "echo", map[string]any{"text": "alice qs"})); r.Status != http.StatusAccepted {
		t.Fatalf("alice's post into her own session: HTTP %d %s", r.Status, r.Body)
	}
	if run, ok := waitRun(t, s.TS, "echo", "alice qs", 2*time.Second); !ok || run.Session != raw {
		t.Fatalf("alice's call: ran %v in %q, want %q", ok, run.Session, raw)
	}
	base, _, _ := strings.Cut(ls.PostURL, "?")
	for _, name := range []string{"sessionId[]", "sessionId%5B%5D", "sessionId[0]"} {
		text := "bob via " + name
		target := base + "?" + name + "=" + url.QueryEscape(raw)
		r := legacyPost(t, target, bob.Token.AccessToken, "application/json", toolCall(2, "echo", map[string]any{"text": text}))
		if r.Status != http.StatusNotFound {
			t.Errorf("bob's post to %s: HTTP %d %s, want 404", target, r.Status, r.Body)
		}
		if run, ran := waitRun(t, s.TS, "echo", text, 300*time.Millisecond); ran {
			t.Errorf("bob's echo through %s ran in session %q (alice's is %q) as %q", name, run.Session, raw, run.User)
		}
	}
	if ev, ok := ls.waitEvent("bob via", 300*time.Millisecond); ok {
		t.Errorf("bob's result reached alice's event stream: %s", ev)
	}
}
