package gatewaytest

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
)

// Charset differentials: the filter reads an MCP POST body as UTF-8, the TypeScript SDK's
// servers decode it in the charset the Content-Type names (createMcpExpressApp's body-parser:
// any utf-*; the legacy SSEServerTransport: any charset iconv-lite knows). The routes to them
// allow every signed-in user but deny every tool except echo.

// charsetCase is a Content-Type and a body. Oracle lists the TS transports ("streamable",
// "legacy") that, sent the case directly (no gateway), run Tool with Args — the proof that the
// upstream honours the charset; empty when neither does (a case the gateway must still refuse).
type charsetCase struct {
	name   string
	ct     string
	body   []byte
	oracle []string
	tool   string
	args   map[string]any
}

// smuggleBody is an allowed echo call to the UTF-8 reader; its argument holds UTF-7-shifted
// quotes that, decoded as UTF-7, close it and add a second "params" naming drop_database
// (JSON.parse keeps the last duplicate key). marker makes the call's text unique.
func smuggleBody(marker string, imap bool) []byte {
	hidden := utf7(`"}},"params":{"name":"drop_database","arguments":{"text":"`, imap)
	return []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
		marker + hidden + marker + `"}}}`)
}

func charsetCases() []charsetCase {
	drop := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"drop_database","arguments":{"text":"wide"}}}`
	rename := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"drop+AF8-database"}}`)
	both, legacyOnly := []string{"streamable", "legacy"}, []string{"legacy"}
	dropArgs := func(text string) map[string]any { return map[string]any{"text": text} }
	echo := func(body string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + body + `"}}}`)
	}
	cs := []charsetCase{
		{"utf-7/rename", "application/json; charset=utf-7", rename, both, "drop_database", map[string]any{}},
		{"utf-7/smuggle", "application/json; charset=utf-7", smuggleBody("s1", false), both, "drop_database", dropArgs("s1")},
		{"UTF-7/smuggle", "application/json; charset=UTF-7", smuggleBody("s2", false), both, "drop_database", dropArgs("s2")},
		{"quoted-utf-7/smuggle", `application/json; charset="utf-7"`, smuggleBody("s3", false), both, "drop_database", dropArgs("s3")},
		{"nospace-utf-7/smuggle", "application/json;charset=utf-7", smuggleBody("s4", false), both, "drop_database", dropArgs("s4")},
		{"other-param-then-utf-7/smuggle", "application/json; foo=bar; charset=utf-7", smuggleBody("s5", false), both, "drop_database", dropArgs("s5")},
		{"utf-8-then-utf-7/smuggle", "application/json; charset=utf-8; charset=utf-7", smuggleBody("s6", false), legacyOnly, "drop_database", dropArgs("s6")},
		{"APPLICATION/JSON-utf-7/smuggle", "APPLICATION/JSON; CHARSET=UTF-7", smuggleBody("s7", false), both, "drop_database", dropArgs("s7")},
		// body-parser takes the first charset parameter, the legacy transport (content-type) the
		// last.
		{"utf-7-then-utf-8/smuggle", "application/json; charset=utf-7; charset=utf-8", smuggleBody("s10", false), []string{"streamable"}, "drop_database", dropArgs("s10")},
		{"utf-7-imap/smuggle", "application/json; charset=utf-7-imap", smuggleBody("s8", true), both, "drop_database", dropArgs("s8")},
		{"utf-7/echo-argument", "application/json; charset=utf-7", echo("x+AGE-y"), both, "echo", dropArgs("xay")},
		{"utf-16le", "application/json; charset=utf-16le", utf16Bytes(drop, false, false), both, "drop_database", dropArgs("wide")},
		{"utf-16be", "application/json; charset=utf-16be", utf16Bytes(drop, true, false), both, "drop_database", dropArgs("wide")},
		{"utf-16le-bom", "application/json; charset=utf-16le", utf16Bytes(drop, false, true), both, "drop_database", dropArgs("wide")},
		{"utf-16-bom-le", "application/json; charset=utf-16", utf16Bytes(drop, false, true), both, "drop_database", dropArgs("wide")},
		{"utf-16-bom-be", "application/json; charset=utf-16", utf16Bytes(drop, true, true), both, "drop_database", dropArgs("wide")},
		{"utf-32le", "application/json; charset=utf-32le", utf32Bytes(drop, false, false), both, "drop_database", dropArgs("wide")},
		{"utf-32be", "application/json; charset=utf-32be", utf32Bytes(drop, true, false), both, "drop_database", dropArgs("wide")},
		// Charsets body-parser refuses (not utf-*) but the legacy transport decodes.
		{"utf7-alias/smuggle", "application/json; charset=utf7", smuggleBody("s9", false), legacyOnly, "drop_database", dropArgs("s9")},
		{"unicode-1-1-utf-7/rename", "application/json; charset=unicode-1-1-utf-7", rename, legacyOnly, "drop_database", map[string]any{}},
		{"ucs-2/wide", "application/json; charset=ucs-2", utf16Bytes(drop, false, false), legacyOnly, "drop_database", dropArgs("wide")},
		{"latin1/echo-argument", "application/json; charset=latin1", echo("caf\xe9"), legacyOnly, "echo", dropArgs("café")},
		{"windows-1252/echo-argument", "application/json; charset=windows-1252", echo("\x80"), legacyOnly, "echo", dropArgs("€")},
		{"shift_jis/echo-argument", "application/json; charset=shift_jis", echo("\x82\xa0"), legacyOnly, "echo", dropArgs("あ")},
		// No charset differential at the upstreams, but not the single charset=utf-8 the
		// gateway accepts.
		{"utf-8-extra-param", "application/json; charset=utf-8;x=y", smuggleBody("r2", false), nil, "", nil},
		{"extra-param-only", "application/json; x=y", smuggleBody("r3", false), nil, "", nil},
		{"charset-without-value", "application/json; charset", smuggleBody("r4", false), nil, "", nil},
		{"trailing-semicolon", "application/json;", smuggleBody("r5", false), nil, "", nil},
		{"empty-charset", "application/json; charset=", smuggleBody("r6", false), nil, "", nil},
		{"unterminated-quote", `application/json; charset="utf-8`, smuggleBody("r7", false), nil, "", nil},
	}
	return cs
}

// TestRedTeam_CharsetOracle sends every case straight to the TypeScript servers (no gateway)
// and checks that they really run what the charset says: the differential the gateway must
// close exists, and the run log detects it.
func TestRedTeam_CharsetOracle(t *testing.T) {
	ts := harness.StartTSServers(t)
	sid := openSession(t, ts.URL+"/ts", "", tsProtocol)
	legacy := openLegacy(t, ts.URL+"/legacy/sse", ts.URL, "")
	// The control: as UTF-8 the smuggling body is the echo call the gateway sees.
	control := charsetCase{"control-utf-8/smuggle", "application/json", smuggleBody("c1", false), []string{"streamable", "legacy"}, "echo",
		map[string]any{"text": "c1" + utf7(`"}},"params":{"name":"drop_database","arguments":{"text":"`, false) + "c1"}}
	for _, c := range append(charsetCases(), control) {
		for _, transport := range c.oracle {
			t.Run(transport+"/"+c.name, func(t *testing.T) {
				before := len(ts.Log(t).Runs)
				var r mcpReply
				if transport == "streamable" {
					r = mcpDo(t, http.MethodPost, ts.URL+"/ts", "", sid, http.Header{"Content-Type": {c.ct}}, c.body)
				} else {
					r = legacyPost(t, legacy.PostURL, "", c.ct, c.body)
				}
				deadline := time.Now().Add(3 * time.Second)
				var runs []harness.TSRun
				for len(runs) == 0 && time.Now().Before(deadline) {
					runs = runsSince(ts.Log(t), before)
					time.Sleep(10 * time.Millisecond)
				}
				if len(runs) != 1 || runs[0].Tool != c.tool || !sameJSON(runs[0].Args, c.args) || runs[0].Transport != transport {
					t.Fatalf("upstream answered %d %.200s; runs %+v, want one %s run of %s %v", r.Status, r.Body, runs, transport, c.tool, c.args)
				}
			})
		}
	}
}

// TestRedTeam_CharsetThroughGateway sends every case (and the oracle-proven ones above) through
// the gateway with a real External Token: each is refused and no tool but echo ever runs; the
// accepted forms of application/json still work.
func TestRedTeam_CharsetThroughGateway(t *testing.T) {
	s := startStackWith(t, stackOptions{TSServers: true})
	alice := signIn(t, s, s.TSURL)
	aliceLegacy := signIn(t, s, s.LegacyURL)
	sid := openSession(t, s.TSURL, alice.Token.AccessToken, tsProtocol)
	legacy := openLegacy(t, s.LegacyURL+"/sse", s.MCPOrigin, aliceLegacy.Token.AccessToken)
	start := len(s.TS.Log(t).Runs)

	send := func(t *testing.T, transport, ct string, body []byte) mcpReply {
		if transport == "streamable" {
			return mcpDo(t, http.MethodPost, s.TSURL, alice.Token.AccessToken, sid, http.Header{"Content-Type": {ct}}, body)
		}
		return legacyPost(t, legacy.PostURL, aliceLegacy.Token.AccessToken, ct, body)
	}
	for _, transport := range []string{"streamable", "legacy"} {
		for _, ct := range []string{"application/json", "application/json; charset=utf-8", `application/json;charset="UTF-8"`, "Application/JSON; Charset=Utf-8"} {
			t.Run(transport+"/accepted/"+ct, func(t *testing.T) {
				text := "ok " + transport + " " + ct
				r := send(t, transport, ct, toolCall(5, "echo", map[string]any{"text": text}))
				if transport == "streamable" && (r.Status != http.StatusOK || r.text() != text) {
					t.Fatalf("echo with Content-Type %q: %d %.300s", ct, r.Status, r.Body)
				}
				if transport == "legacy" && r.Status != http.StatusAccepted {
					t.Fatalf("echo with Content-Type %q: %d %.300s", ct, r.Status, r.Body)
				}
				if _, ok := waitRun(t, s.TS, "echo", text, 3*time.Second); !ok {
					t.Fatalf("echo with Content-Type %q did not run", ct)
				}
			})
		}
		for _, c := range charsetCases() {
			t.Run(transport+"/refused/"+c.name, func(t *testing.T) {
				seen := len(s.TS.Log(t).Requests)
				r := send(t, transport, c.ct, c.body)
				if r.Status < 400 {
					t.Errorf("Content-Type %q: %d %.200s, want a refusal (415)", c.ct, r.Status, r.Body)
				} else if r.Status != http.StatusUnsupportedMediaType {
					t.Logf("Content-Type %q: refused with %d, not 415", c.ct, r.Status)
				}
				// The gateway refuses it: the upstream never sees the request (a refusal by
				// the upstream's own parser is luck, not a defence).
				if reqs := s.TS.Log(t).Requests[seen:]; len(reqs) != 0 {
					t.Errorf("Content-Type %q reached the upstream (answer %d): %+v", c.ct, r.Status, reqs)
				}
			})
		}
	}

	// Duplicate Content-Type headers, sent raw.
	u, _ := url.Parse(s.TSURL)
	for _, dup := range [][2]string{
		{"application/json; charset=utf-7", "application/json"},
		{"application/json", "application/json; charset=utf-7"},
		{"application/json", "application/json"},
	} {
		t.Run(fmt.Sprintf("streamable/duplicate-content-type/%s+%s", dup[0], dup[1]), func(t *testing.T) {
			body := string(smuggleBody("dup", false))
			req := "POST " + u.Path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nAuthorization: Bearer " + alice.Token.AccessToken +
				"\r\nMcp-Session-Id: " + sid + "\r\nMcp-Protocol-Version: " + tsProtocol +
				"\r\nAccept: application/json, text/event-stream\r\nContent-Type: " + dup[0] + "\r\nContent-Type: " + dup[1] +
				fmt.Sprintf("\r\nContent-Length: %d\r\n\r\n", len(body)) + body
			seen := len(s.TS.Log(t).Requests)
			st, resp := rawExchange(t, u.Host, req)
			if st < 400 {
				t.Errorf("duplicate Content-Type %q, %q: %d %.200s, want a refusal", dup[0], dup[1], st, resp)
			}
			if reqs := s.TS.Log(t).Requests[seen:]; len(reqs) != 0 {
				t.Errorf("duplicate Content-Type reached the upstream (answer %d): %+v", st, reqs)
			}
		})
	}

	// A sentinel echo in each transport: once it has run, everything sent before has been
	// handled.
	for _, transport := range []string{"streamable", "legacy"} {
		text := "sentinel " + transport
		send(t, transport, "application/json", toolCall(6, "echo", map[string]any{"text": text}))
		if _, ok := waitRun(t, s.TS, "echo", text, 5*time.Second); !ok {
			t.Fatalf("sentinel echo on %s did not run", transport)
		}
	}
	for _, r := range runsSince(s.TS.Log(t), start) {
		if r.Tool != "echo" {
			t.Errorf("a denied tool ran through the gateway: %+v", r)
		} else if txt, _ := r.Args["text"].(string); !strings.HasPrefix(txt, "ok ") && !strings.HasPrefix(txt, "sentinel ") {
			t.Errorf("echo ran with an argument the gateway did not see: %+v", r)
		}
	}
}

// TestRedTeam_CharsetMutationDifferential sends a few thousand deterministic random
// Content-Type and body mutations through the gateway to the TS Streamable HTTP server in one
// session, then compares the upstream's run log with what the gateway let through: every run
// is echo, with exactly the arguments a UTF-8 reader finds in a body the gateway passed.
func TestRedTeam_CharsetMutationDifferential(t *testing.T) {
	s := startStackWith(t, stackOptions{TSServers: true})
	alice := signIn(t, s, s.TSURL)
	sid := openSession(t, s.TSURL, alice.Token.AccessToken, tsProtocol)
	start := len(s.TS.Log(t).Runs)

	const n = 3000
	rng := rand.New(rand.NewSource(20260728))
	charsets := []string{"", "utf-8", "UTF-8", `"utf-8"`, "utf-7", "UTF-7", `"utf-7"`, "utf-7-imap", "utf-16le",
		"utf-16be", "utf-16", "utf-32le", "latin1", "shift_jis", "utf-8; charset=utf-7", "utf-8;x=y", "utf-8,utf-7", "utf-8 ", " utf-7"}
	alphabet := []byte(`"{}[]:,\+-&/_ AZaz09.`)
	fragments := []string{`"`, `"}}`, `,"params":{"name":"drop_database"}`, `"name":"drop_database"`, `}`, `\`}
	type sent struct {
		ct   string
		body []byte
	}
	cases := make([]sent, n)
	for i := range cases {
		var body []byte
		switch rng.Intn(4) {
		case 0:
			body = smuggleBody(fmt.Sprintf("m%d", i), rng.Intn(2) == 0)
		case 1:
			body = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"drop+AF8-database"}}`)
		default:
			frag := fragments[rng.Intn(len(fragments))]
			body = []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"m%d%s"}}}`,
				i, i, utf7(frag, rng.Intn(3) == 0)))
		}
		for k := rng.Intn(4); k > 0; k-- {
			p := rng.Intn(len(body))
			switch rng.Intn(3) {
			case 0: // replace
				body[p] = alphabet[rng.Intn(len(alphabet))]
			case 1: // insert
				body = append(body[:p], append([]byte{alphabet[rng.Intn(len(alphabet))]}, body[p:]...)...)
			default: // delete
				body = append(body[:p], body[p+1:]...)
			}
		}
		ct := "application/json"
		if c := charsets[rng.Intn(len(charsets))]; c != "" {
			sep := []string{"; ", ";", " ; "}[rng.Intn(3)]
			key := []string{"charset", "Charset", "CHARSET"}[rng.Intn(3)]
			ct += sep + key + "=" + c
		}
		cases[i] = sent{ct, body}
	}

	began := time.Now()
	passed := make([]bool, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := mcpDo(t, http.MethodPost, s.TSURL, alice.Token.AccessToken, sid, http.Header{"Content-Type": {cases[i].ct}}, cases[i].body)
				passed[i] = r.Status < 300
			}
		}()
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()
	mcpDo(t, http.MethodPost, s.TSURL, alice.Token.AccessToken, sid, nil, toolCall(6, "echo", map[string]any{"text": "sentinel"}))
	if _, ok := waitRun(t, s.TS, "echo", "sentinel", 5*time.Second); !ok {
		t.Fatal("sentinel echo did not run")
	}

	// What a UTF-8 reader finds in each body the gateway passed.
	allowed := map[string]bool{}
	npassed := 0
	for i, c := range cases {
		if !passed[i] {
			continue
		}
		npassed++
		var m struct {
			Params struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(c.body, &m) == nil && m.Params.Name == "echo" {
			if m.Params.Arguments == nil { // the server's default for absent arguments
				m.Params.Arguments = map[string]any{}
			}
			b, _ := json.Marshal(m.Params.Arguments)
			allowed[string(b)] = true
		}
	}
	runs := runsSince(s.TS.Log(t), start)
	t.Logf("%d bodies in %v; the gateway passed %d; the upstream ran %d tools (with the sentinel)", n, time.Since(began).Round(time.Millisecond), npassed, len(runs))
	bad := 0
	for _, r := range runs {
		b, _ := json.Marshal(r.Args)
		if r.Tool != "echo" || (!allowed[string(b)] && r.Args["text"] != "sentinel") {
			if bad++; bad <= 10 {
				t.Errorf("the upstream ran %s %s, which the gateway did not let through", r.Tool, b)
			}
		}
	}
	if bad > 10 {
		t.Errorf("… %d such runs in all", bad)
	}
}

// sameJSON compares two JSON-like values.
func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
