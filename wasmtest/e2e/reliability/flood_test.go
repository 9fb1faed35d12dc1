package reliability

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// legitLoad runs the legitimate users for d: each makes tool calls in a loop and refreshes
// every tenth call (so some calls carry a token the gateway has not cached yet). Every answer
// must be 200.
func legitLoad(t *testing.T, s *rstack, users []*user, name string, d time.Duration) *tally {
	tl := newTally(name)
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for _, u := range users {
		wg.Go(func() {
			for i := 0; i < 100_000 && time.Now().Before(deadline); i++ {
				start := time.Now()
				if i%10 == 9 {
					st, code, tr := u.c.refreshStatus(u.refresh)
					tl.add(st, time.Since(start), false)
					if st != http.StatusOK {
						t.Errorf("%s: legitimate refresh: %d %s", name, st, code)
						return
					}
					u.refresh, u.cached = tr.RefreshToken, tr.AccessToken
					continue
				}
				st := mcp(s.MCPURL, u.cached)
				tl.add(st, time.Since(start), false)
				if st != http.StatusOK {
					t.Errorf("%s: legitimate tool call: %d", name, st)
				}
				time.Sleep(5 * time.Millisecond) // a user, not a load generator
			}
		})
	}
	wg.Wait()
	return tl
}

// flood sends attack requests from workers goroutines until d passes or max were sent.
func flood(name string, workers, max int, d time.Duration, send func(i int) (int, bool)) *tally {
	tl := newTally(name)
	var n atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				i := int(n.Add(1))
				if i > max {
					return
				}
				start := time.Now()
				st, wrong := send(i)
				tl.add(st, time.Since(start), wrong)
			}
		})
	}
	wg.Wait()
	return tl
}

// post sends a request and returns its status.
func post(url, contentType string, body []byte, header http.Header) int {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode
}

// TestFloods measures legitimate users (tool calls and refreshes through the gateway) while
// the public listener is flooded, against a quiet baseline in the same run: distinct garbage
// bearer tokens, one garbage token repeated, client registrations, sign-in starts, huge
// headers and slow-loris connections. Legitimate requests must all succeed, no attack request
// may pass, and the work an attack causes must stay bounded (check calls per garbage token,
// registrations refused with 429, headers refused before they are read whole).
func TestFloods(t *testing.T) {
	s := startStack(t, stackOptions{Quiet: true})
	users := signInUsers(t, s, 4)
	d := time.Duration(scale(3, 20)) * time.Second
	limit := scale(3000, 50000)
	baseline := legitLoad(t, s, users, "baseline (quiet)", d)
	report(t, baseline)

	noRedirect := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	floods := []struct {
		name    string
		workers int
		send    func(i int) (int, bool)
		check   func(t *testing.T, ft *tally, checks int64)
	}{
		{"distinct garbage bearer tokens", 32, func(i int) (int, bool) {
			st := mcp(s.MCPURL, "garbage-"+strconv.Itoa(i))
			return st, st == http.StatusOK
		}, func(t *testing.T, ft *tally, checks int64) {
			if ft.count(401)+ft.count(503) != ft.sent {
				t.Errorf("garbage tokens answered other than 401/503: %s", ft)
			}
		}},
		{"one garbage bearer token repeated", 32, func(int) (int, bool) {
			st := mcp(s.MCPURL, "the-same-garbage")
			return st, st == http.StatusOK
		}, func(t *testing.T, ft *tally, _ int64) {
			checks := s.MarkedChecks.Load()
			t.Logf("RELIABILITY %s: check calls for the repeated garbage token: %d", t.Name(), checks)
			// Remembered for 5 s per VM. Each time the memory lapses, the requests that
			// arrive while the one check is in flight call too (calls are not coalesced), so
			// the bound is a fraction of the requests (it depends on how long a check takes),
			// not one per 5 s.
			if checks*10 > int64(ft.sent) {
				t.Errorf("%d check calls for %d requests with one refused token: over 10%%", checks, ft.sent)
			}
		}},
		{"client registrations", 16, func(i int) (int, bool) {
			body := fmt.Sprintf(`{"client_name":"flood %d","redirect_uris":["http://127.0.0.1:9/cb%d"],"token_endpoint_auth_method":"none"}`, i, i)
			return post(s.MCPOrigin+"/.gateway/mcp/register", "application/json", []byte(body), nil), false
		}, func(t *testing.T, ft *tally, _ int64) {
			if ft.count(http.StatusCreated) > 200 || ft.count(http.StatusTooManyRequests) == 0 {
				t.Errorf("registration flood not limited: %s", ft)
			}
		}},
		{"sign-in starts", 16, func(int) (int, bool) {
			resp, err := noRedirect.Get(s.MCPOrigin + "/.gateway/sign_in?return_to=/")
			if err != nil {
				return 0, false
			}
			resp.Body.Close()
			return resp.StatusCode, false
		}, nil},
		{"huge headers (100 KiB)", 8, func(int) (int, bool) {
			h := http.Header{"Authorization": {"Bearer " + strings.Repeat("x", 100<<10)}}
			st := post(s.MCPURL, "application/json", []byte(toolCall), h)
			return st, st == http.StatusOK
		}, func(t *testing.T, ft *tally, _ int64) {
			if ft.count(http.StatusRequestHeaderFieldsTooLarge) != ft.sent {
				t.Errorf("huge headers not refused with 431: %s", ft)
			}
		}},
	}
	for _, f := range floods {
		t.Run(strings.ReplaceAll(f.name, " ", "_"), func(t *testing.T) {
			checks0 := s.Checks.Load()
			marker := "the-same-garbage"
			s.CheckMarker.Store(&marker)
			s.MarkedChecks.Store(0)
			var ft *tally
			done := make(chan struct{})
			workers := f.workers
			if !full() {
				workers = max(1, workers/4) // make test: a lighter flood beside the other packages' tests
			}
			go func() { defer close(done); ft = flood(f.name, workers, limit, d, f.send) }()
			lt := legitLoad(t, s, users, "legitimate users during: "+f.name, d)
			<-done
			checks := s.Checks.Load() - checks0
			report(t, ft, lt)
			t.Logf("RELIABILITY %s: check calls during the flood (legitimate users' included): %d", t.Name(), checks)
			if ft.wrong > 0 {
				t.Errorf("%d flood requests were allowed", ft.wrong)
			}
			if f.check != nil {
				f.check(t, ft, checks)
			}
		})
	}

	t.Run("slow-loris", func(t *testing.T) {
		// Connections that send a header byte now and then and never finish: the listener
		// must keep serving everyone else (ReadHeaderTimeout ends them).
		conns := scale(100, 400)
		var opened []net.Conn
		for range conns {
			c, err := net.Dial("tcp", strings.TrimPrefix(s.MCPOrigin, "http://"))
			if err != nil {
				break
			}
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Slow: ", strings.TrimPrefix(s.MCPOrigin, "http://"))
			opened = append(opened, c)
		}
		stop := make(chan struct{})
		var drip sync.WaitGroup
		drip.Go(func() {
			tick := time.NewTicker(500 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					for _, c := range opened {
						_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
						_, _ = c.Write([]byte("a"))
					}
				}
			}
		})
		lt := legitLoad(t, s, users, fmt.Sprintf("legitimate users during: %d slow-loris connections", len(opened)), d)
		close(stop)
		drip.Wait()
		for _, c := range opened {
			c.Close()
		}
		report(t, lt)
	})
	t.Logf("RELIABILITY %s: baseline p50 %v p99 %v", t.Name(), baseline.percentile(50), baseline.percentile(99))
}
