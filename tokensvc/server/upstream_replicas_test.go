package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres/pgtest"
	"github.com/mcpmesh/gateway/tokensvc/upstream"
)

// countingTokenEndpoint is an upstream token endpoint that knows whose each refresh token
// is, rotates it, refuses a spent one (invalid_grant) and counts every presentation.
type countingTokenEndpoint struct {
	mu    sync.Mutex
	owner map[string]string // live refresh token -> user
	seen  map[string]int    // presentations per refresh token
	n     int
}

func (c *countingTokenEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	time.Sleep(5 * time.Millisecond) // a provider takes a while: refreshes overlap
	c.mu.Lock()
	defer c.mu.Unlock()
	rt := r.PostForm.Get("refresh_token")
	c.seen[rt]++
	user, ok := c.owner[rt]
	w.Header().Set("Content-Type", "application/json")
	if !ok {
		w.WriteHeader(400)
		fmt.Fprint(w, `{"error":"invalid_grant"}`)
		return
	}
	delete(c.owner, rt)
	c.n++
	next := fmt.Sprintf("rt-%d-%s", c.n, user)
	c.owner[next] = user
	fmt.Fprintf(w, `{"access_token":"ti-%d-of-%s-end","token_type":"Bearer","refresh_token":%q,"expires_in":3600}`, c.n, user, next)
}

// TestUpstream_ReplicasRefreshThroughTheCheckAPI: 50 users whose TIs have expired, each
// checked concurrently at two token-service replicas (the check API over HTTP, as filters on
// two pods would) sharing one store (one SQLite file, or one PostgreSQL database): every
// answer carries the user's own new TI, and the provider sees each refresh token once.
func TestUpstream_ReplicasRefreshThroughTheCheckAPI(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Parse([]byte(testConfigYAML), nil)
			if err != nil {
				t.Fatal(err)
			}
			switch backend {
			case "sqlite":
				cfg.Storage = config.Storage{Type: "sqlite", Path: filepath.Join(t.TempDir(), "gw.db")}
			case "postgres":
				pgtest.Require(t)
				cfg.Storage = config.Storage{Type: "postgres", DSN: pgtest.DSN(t)}
			}
			ep := &countingTokenEndpoint{owner: map[string]string{}, seen: map[string]int{}}
			var replicas []*Server
			var urls []string
			for range 2 {
				srv, err := New(context.Background(), cfg, WithConnector(newIDP()), WithLogger(slog.New(slog.DiscardHandler)),
					WithUpstreamHTTPClient(&http.Client{Transport: inProcess{ep}}))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = srv.Close() })
				ts := httptest.NewServer(srv.InternalHandler())
				t.Cleanup(ts.Close)
				replicas, urls = append(replicas, srv), append(urls, ts.URL)
			}
			const users = 50
			tokens := make([]string, users)
			for i := range users {
				user := fmt.Sprintf("user-%d", i)
				seed := "rt-seed-" + user
				ep.owner[seed] = user
				tokens[i] = seedUpstreamUser(t, replicas[0], user, upstream.Token{AccessToken: "expired-" + user, RefreshToken: seed, Expiry: time.Now().Add(-time.Second)})
			}
			var mu sync.Mutex
			var problems []string
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range users {
				want := fmt.Sprintf("-of-user-%d-end", i)
				for _, u := range urls {
					for range 2 {
						wg.Go(func() {
							<-start
							body, _ := json.Marshal(checkapi.Request{RouteID: ghRoute, Host: "gh.example.com", Token: tokens[i]})
							req, _ := http.NewRequest(http.MethodPost, u+paths.Check, strings.NewReader(string(body)))
							req.Header.Set(checkapi.KeyHeader, cfg.FilterKey())
							resp, err := http.DefaultClient.Do(req)
							if err != nil {
								mu.Lock()
								problems = append(problems, err.Error())
								mu.Unlock()
								return
							}
							var out checkapi.Response
							_ = json.NewDecoder(resp.Body).Decode(&out)
							resp.Body.Close()
							if resp.StatusCode != 200 || !strings.HasSuffix(out.UpstreamToken, want) {
								mu.Lock()
								problems = append(problems, fmt.Sprintf("user-%d: %d %q", i, resp.StatusCode, out.UpstreamToken))
								mu.Unlock()
							}
						})
					}
				}
			}
			close(start)
			wg.Wait()
			ep.mu.Lock()
			defer ep.mu.Unlock()
			for rt, n := range ep.seen {
				if n != 1 {
					problems = append(problems, fmt.Sprintf("refresh token %s presented %d times", rt, n))
				}
			}
			if len(ep.seen) != users {
				problems = append(problems, fmt.Sprintf("%d refresh tokens presented, want %d", len(ep.seen), users))
			}
			if len(problems) > 0 {
				t.Fatalf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
			}
		})
	}
}
