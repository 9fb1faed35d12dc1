package gatewaytest

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
)

// Session binding: an MCP session ID (Mcp-Session-Id) works only for the user who opened the
// session, on the route where it was opened. Alice and Bob are both allowed on the routes and
// each has a real External Token of their own.

// signInAs signs sub in at the provider (a new browser, so no earlier session is reused) and
// returns the client; the provider logs Alice in again afterwards.
func signInAs(t *testing.T, s *stack, sub, resource string) *client {
	t.Helper()
	s.IDP.LoginAs(t, sub)
	defer s.IDP.LoginAs(t, "alice")
	return signIn(t, s, resource)
}

// requestsBy returns the upstream requests from user carrying session.
func requestsBy(l harness.TSLog, user, session string) []harness.TSRequest {
	var out []harness.TSRequest
	for _, r := range l.Requests {
		if r.User == user && r.Session == session {
			out = append(out, r)
		}
	}
	return out
}

func TestRedTeam_SessionBinding_TSStreamable(t *testing.T) {
	s := startStackWith(t, stackOptions{TSServers: true})
	alice := signIn(t, s, s.TSURL)
	bob := signInAs(t, s, "bob", s.TSURL)
	at, bt := alice.Token.AccessToken, bob.Token.AccessToken

	sid := openSession(t, s.TSURL, at, tsProtocol)
	var raw string
	for _, ss := range s.TS.Log(t).Sessions {
		if ss.Transport == "streamable" && ss.User == "alice@example.com" {
			raw = ss.ID
		}
	}
	if raw == "" {
		t.Fatal("the upstream logged no session of alice")
	}
	if sid == raw {
		t.Errorf("the client saw the upstream's own session ID %q (want the gateway's wrapped ID)", raw)
	}
	// The wrapped ID may carry the upstream's in clear (the MAC is what binds it): noted only.
	t.Logf("wrapped session ID %q, upstream's %q", sid, raw)
	secret := callTool(t, s.TSURL, at, sid, tsProtocol, "echo", map[string]any{"text": "alice secret"})
	if secret.Status != http.StatusOK || secret.text() != "alice secret" {
		t.Fatalf("alice's echo: %d %.300s", secret.Status, secret.Body)
	}
	if run, ok := waitRun(t, s.TS, "echo", "alice secret", 3*time.Second); !ok || run.Session != raw {
		t.Fatalf("alice's echo ran in %+v (ok %v), want session %s", run, ok, raw)
	}
	ids := secret.eventIDs()
	if len(ids) == 0 {
		t.Fatalf("alice's echo answer has no SSE event IDs: %.300s", secret.Body)
	}
	primingID := ids[0] // the event before the result: replaying after it sends the result

	// checkBobNeverReached checks the upstream's log after the first reqs requests and runs
	// (the subtest's own): no request of bob's with alice's session, no run of bob's.
	checkBobNeverReached := func(t *testing.T, reqs, runs int) {
		t.Helper()
		l := s.TS.Log(t)
		l.Requests = l.Requests[reqs:]
		for _, id := range []string{raw, sid} {
			if got := requestsBy(l, "bob@example.com", id); len(got) != 0 {
				t.Errorf("bob's requests with alice's session reached the upstream: %+v", got)
			}
		}
		for _, r := range runsSince(l, runs) {
			if r.User == "bob@example.com" {
				t.Errorf("bob ran a tool: %+v", r)
			}
		}
	}
	mark := func() (int, int) { l := s.TS.Log(t); return len(l.Requests), len(l.Runs) }

	t.Run("BobPostsToolCallWithAlicesSession", func(t *testing.T) {
		reqs, runs := mark()
		r := callTool(t, s.TSURL, bt, sid, tsProtocol, "echo", map[string]any{"text": "bob was here"})
		if r.Status != http.StatusNotFound {
			t.Errorf("bob's tools/call in alice's session: %d %.300s, want 404", r.Status, r.Body)
		}
		if _, ran := waitRun(t, s.TS, "echo", "bob was here", 300*time.Millisecond); ran {
			t.Error("bob's echo ran")
		}
		checkBobNeverReached(t, reqs, runs)
	})
	t.Run("BobOpensAlicesSSEStream", func(t *testing.T) {
		reqs, runs := mark()
		r := mcpDo(t, http.MethodGet, s.TSURL, bt, sid, nil, nil)
		if r.Status != http.StatusNotFound {
			t.Errorf("bob's GET of alice's stream: %d %.300s, want 404", r.Status, r.Body)
		}
		checkBobNeverReached(t, reqs, runs)
	})
	t.Run("BobResumesAlicesStreamWithLastEventID", func(t *testing.T) {
		reqs, runs := mark()
		r := mcpDo(t, http.MethodGet, s.TSURL, bt, sid, http.Header{"Last-Event-Id": {primingID}}, nil)
		if r.Status != http.StatusNotFound || strings.Contains(r.Body, "alice secret") {
			t.Errorf("bob's GET with Last-Event-ID of alice's stream: %d (alice's echo result replayed to bob: %v) %.300s, want 404",
				r.Status, strings.Contains(r.Body, "alice secret"), r.Body)
		}
		checkBobNeverReached(t, reqs, runs)
	})
	t.Run("BobDeletesAlicesSession", func(t *testing.T) {
		reqs, runs := mark()
		r := mcpDo(t, http.MethodDelete, s.TSURL, bt, sid, nil, nil)
		if r.Status != http.StatusNotFound {
			t.Errorf("bob's DELETE of alice's session: %d %.300s, want 404", r.Status, r.Body)
		}
		checkBobNeverReached(t, reqs, runs)
		if r := callTool(t, s.TSURL, at, sid, tsProtocol, "echo", map[string]any{"text": "alice after delete"}); r.Status != http.StatusOK || r.text() != "alice after delete" {
			t.Errorf("alice's session after bob's DELETE: %d %.300s", r.Status, r.Body)
		}
	})
	t.Run("BobWithTheUpstreamsRawSessionID", func(t *testing.T) {
		reqs, runs := mark()
		r := callTool(t, s.TSURL, bt, raw, tsProtocol, "echo", map[string]any{"text": "bob raw"})
		if r.Status != http.StatusNotFound {
			t.Errorf("bob with the raw upstream session ID: %d %.300s, want 404", r.Status, r.Body)
		}
		checkBobNeverReached(t, reqs, runs)
	})
	t.Run("AliceWithTheUpstreamsRawSessionID", func(t *testing.T) {
		before := len(s.TS.Log(t).Requests)
		for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			var body []byte
			if m == http.MethodPost {
				body = toolCall(3, "echo", map[string]any{"text": "alice raw"})
			}
			if r := mcpDo(t, m, s.TSURL, at, raw, nil, body); r.Status != http.StatusNotFound {
				t.Errorf("alice's %s with the raw upstream session ID: %d %.300s, want 404", m, r.Status, r.Body)
			}
		}
		if reqs := s.TS.Log(t).Requests[before:]; len(reqs) != 0 {
			t.Errorf("requests with the raw session ID reached the upstream: %+v", reqs)
		}
	})
	t.Run("AlicesSessionOnAnotherRoute", func(t *testing.T) {
		alice2 := signIn(t, s, s.TS2URL)
		before := len(s.TS.Log(t).Requests)
		r := callTool(t, s.TS2URL, alice2.Token.AccessToken, sid, tsProtocol, "echo", map[string]any{"text": "alice route b"})
		if r.Status != http.StatusNotFound {
			t.Errorf("alice's session ID of route A on route B: %d %.300s, want 404", r.Status, r.Body)
		}
		if reqs := s.TS.Log(t).Requests[before:]; len(reqs) != 0 {
			t.Errorf("the request reached the upstream: %+v", reqs)
		}
		// Route B itself works for her, with a session of its own.
		sid2 := openSession(t, s.TS2URL, alice2.Token.AccessToken, tsProtocol)
		if r := callTool(t, s.TS2URL, alice2.Token.AccessToken, sid2, tsProtocol, "echo", map[string]any{"text": "route b"}); r.Status != http.StatusOK || r.text() != "route b" {
			t.Errorf("alice's own session on route B: %d %.300s", r.Status, r.Body)
		}
	})
	t.Run("AliceKeepsHerSessionAfterRefresh", func(t *testing.T) {
		// Her own stream and resumption work (so bob's 404s above are the binding, not a
		// broken GET).
		if r := mcpDo(t, http.MethodGet, s.TSURL, at, sid, http.Header{"Last-Event-Id": {primingID}}, nil); r.Status != http.StatusOK || !strings.Contains(r.Body, "alice secret") {
			t.Errorf("alice's GET with Last-Event-ID: %d %.300s, want a replay of her result", r.Status, r.Body)
		}
		next, err := alice.refresh(context.Background())
		if err != nil || next.AccessToken == at {
			t.Fatalf("refresh: %v (new access token %v)", err, next != nil && next.AccessToken != at)
		}
		r := callTool(t, s.TSURL, next.AccessToken, sid, tsProtocol, "echo", map[string]any{"text": "alice refreshed"})
		if r.Status != http.StatusOK || r.text() != "alice refreshed" {
			t.Fatalf("alice's session with her refreshed token: %d %.300s", r.Status, r.Body)
		}
		if run, ok := waitRun(t, s.TS, "echo", "alice refreshed", 3*time.Second); !ok || run.Session != raw {
			t.Errorf("alice's call after refresh ran in %+v, want session %s", run, raw)
		}
		if r := mcpDo(t, http.MethodDelete, s.TSURL, next.AccessToken, sid, nil, nil); r.Status != http.StatusOK {
			t.Errorf("alice's DELETE of her session: %d %.300s", r.Status, r.Body)
		}
		if r := callTool(t, s.TSURL, next.AccessToken, sid, tsProtocol, "echo", map[string]any{"text": "gone"}); r.Status != http.StatusNotFound {
			t.Errorf("alice's session after her DELETE: %d %.300s, want 404", r.Status, r.Body)
		}
	})
}

// The same against the Go SDK's everything-server (restricted route: test_simple_text only);
// the open route is the same upstream under another route.
func TestRedTeam_SessionBinding_GoEverything(t *testing.T) {
	const proto = "2025-06-18"
	s := startStack(t)
	alice := signIn(t, s, s.RestrictedURL)
	bob := signInAs(t, s, "bob", s.RestrictedURL)
	at, bt := alice.Token.AccessToken, bob.Token.AccessToken
	sid := openSession(t, s.RestrictedURL, at, proto)
	call := func(token, id string) mcpReply {
		return callTool(t, s.RestrictedURL, token, id, proto, "test_simple_text", map[string]any{})
	}
	if r := call(at, sid); r.Status != http.StatusOK || r.result()["result"] == nil {
		t.Fatalf("alice's call: %d %.300s", r.Status, r.Body)
	}
	h := http.Header{"Mcp-Protocol-Version": {proto}}
	if r := call(bt, sid); r.Status != http.StatusNotFound {
		t.Errorf("bob's tools/call in alice's session: %d %.300s, want 404", r.Status, r.Body)
	}
	if r := mcpDo(t, http.MethodGet, s.RestrictedURL, bt, sid, h, nil); r.Status != http.StatusNotFound {
		t.Errorf("bob's GET of alice's stream: %d %.300s, want 404", r.Status, r.Body)
	}
	h2 := http.Header{"Mcp-Protocol-Version": {proto}, "Last-Event-Id": {"0_0"}}
	if r := mcpDo(t, http.MethodGet, s.RestrictedURL, bt, sid, h2, nil); r.Status != http.StatusNotFound {
		t.Errorf("bob's GET with Last-Event-ID of alice's stream: %d %.300s, want 404", r.Status, r.Body)
	}
	if r := mcpDo(t, http.MethodDelete, s.RestrictedURL, bt, sid, h, nil); r.Status != http.StatusNotFound {
		t.Errorf("bob's DELETE of alice's session: %d %.300s, want 404", r.Status, r.Body)
	}
	if r := call(at, sid); r.Status != http.StatusOK || r.result()["result"] == nil {
		t.Errorf("alice's session after bob's attempts: %d %.300s", r.Status, r.Body)
	}
	// Alice's own ID on the open route (same upstream, other route).
	aliceOpen := signIn(t, s, s.OpenURL)
	r := callTool(t, s.OpenURL, aliceOpen.Token.AccessToken, sid, proto, "test_simple_text", map[string]any{})
	if r.Status != http.StatusNotFound {
		t.Errorf("alice's session ID of the restricted route on the open route: %d %.300s, want 404", r.Status, r.Body)
	}
	next, err := alice.refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r := call(next.AccessToken, sid); r.Status != http.StatusOK || r.result()["result"] == nil {
		t.Errorf("alice's session with her refreshed token: %d %.300s", r.Status, r.Body)
	}
}

// TestRedTeam_LegacySSE_SessionIsBoundToItsUser: the legacy HTTP+SSE transport names its
// session in the query of the endpoint URL it sends as the first event, and runs whatever is
// posted there in that session. Through the gateway that URL carries the session bound to the
// user who opened the stream: alice's own calls run in her session, bob's post with her URL
// (or with the upstream's raw ID) is refused as an unknown session and nothing runs.
func TestRedTeam_LegacySSE_SessionIsBoundToItsUser(t *testing.T) {
	s := startStackWith(t, stackOptions{TSServers: true})
	alice := signIn(t, s, s.LegacyURL)
	bob := signInAs(t, s, "bob", s.LegacyURL)
	ls := openLegacy(t, s.LegacyURL+"/sse", s.MCPOrigin, alice.Token.AccessToken)
	var upstreamID string
	for _, ss := range s.TS.Log(t).Sessions {
		if ss.Transport == "legacy" && ss.User == "alice@example.com" {
			upstreamID = ss.ID
		}
	}
	if upstreamID == "" || ls.SessionID == upstreamID || !strings.HasSuffix(ls.SessionID, "."+upstreamID) {
		t.Fatalf("alice's endpoint event through the gateway carries %q; the upstream's session is %q: want it bound", ls.SessionID, upstreamID)
	}

	// Alice's own session works through the gateway.
	if r := legacyPost(t, ls.PostURL, alice.Token.AccessToken, "application/json", toolCall(7, "echo", map[string]any{"text": "alice in her legacy session"})); r.Status != http.StatusAccepted {
		t.Fatalf("alice's post into her own legacy session: HTTP %d %s", r.Status, r.Body)
	}
	if run, ran := waitRun(t, s.TS, "echo", "alice in her legacy session", 2*time.Second); !ran || run.Session != upstreamID {
		t.Fatalf("alice's call: ran %v in session %q, want her session %q", ran, run.Session, upstreamID)
	}
	if _, ok := ls.waitEvent("alice in her legacy session", 2*time.Second); !ok {
		t.Error("alice's answer did not reach her event stream")
	}

	// Bob, with his own token: her endpoint URL, and the upstream's raw ID, are unknown sessions.
	rawURL := strings.Replace(ls.PostURL, url.QueryEscape(ls.SessionID), upstreamID, 1)
	for _, target := range []struct{ name, url string }{{"alice's endpoint URL", ls.PostURL}, {"the upstream's raw session ID", rawURL}} {
		for _, tool := range []string{"echo", "drop_database"} {
			text := "bob via " + target.name + " " + tool
			r := legacyPost(t, target.url, bob.Token.AccessToken, "application/json", toolCall(8, tool, map[string]any{"text": text}))
			if r.Status != http.StatusNotFound {
				t.Errorf("bob's %s through %s: HTTP %d %s, want 404", tool, target.name, r.Status, r.Body)
			}
			if run, ran := waitRun(t, s.TS, tool, text, 300*time.Millisecond); ran {
				t.Errorf("bob's %s through %s ran: %+v", tool, target.name, run)
			}
		}
	}
	for _, req := range s.TS.Log(t).Requests {
		if req.Session == upstreamID && req.User == "bob@example.com" {
			t.Errorf("the upstream received bob's request into alice's session: %+v", req)
		}
	}
}
