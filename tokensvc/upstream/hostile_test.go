package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hostileModes are token endpoint answers a hostile or broken provider gives. Each must end
// in a clear error that names no secret, and never in a stored token.
func hostileModes(e *env, redirectHits *atomic.Int32) map[string]func(w http.ResponseWriter, r *http.Request) bool {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirectHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"stolen","token_type":"bearer"}`)
	}))
	e.t.Cleanup(elsewhere.Close)
	sec := e.p.secret
	return map[string]func(w http.ResponseWriter, r *http.Request) bool{
		"slow": func(w http.ResponseWriter, r *http.Request) bool {
			select {
			case <-r.Context().Done():
			case <-time.After(3 * time.Second):
			}
			return true
		},
		"slow body": func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"access_token":"`)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(3 * time.Second):
			}
			return true
		},
		"huge": func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"access_token":"`+strings.Repeat("a", 100<<10)+`","token_type":"bearer"}`)
			return true
		},
		"malformed": func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"access_token": "x", `+sec)
			return true
		},
		"error body quoting the secret": func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":"invalid_request","error_description":"bad secret %s"}`, sec)
			return true
		},
		"the secret as the error code": func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":%q}`, sec)
			return true
		},
		"redirect to another host": func(w http.ResponseWriter, r *http.Request) bool {
			http.Redirect(w, r, elsewhere.URL+"/token", http.StatusTemporaryRedirect)
			return true
		},
		"200 without access_token": func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"token_type":"bearer","refresh_token":"rt-`+sec+`"}`)
			return true
		},
		"token_type mac": func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"access_token":"x","token_type":"mac"}`)
			return true
		},
		"html error page": func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			fmt.Fprint(w, `<html>`+sec+`</html>`)
			return true
		},
	}
}

func TestHostileProvider_CodeExchange(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	probe := newEnv(t, "header", nil)
	for name := range hostileModes(probe, &hits) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, "header", nil)
			e.svc.callTimeout = 500 * time.Millisecond
			var redirected atomic.Int32
			e.p.hostile = hostileModes(e, &redirected)[name]
			sid := e.session("alice", "alice@example.com")
			start := time.Now()
			rec := e.connect(sid)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %s", d)
			}
			if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "could not obtain a token") || rec.Header().Get("Location") != "" {
				t.Errorf("callback: %d %s", rec.Code, rec.Body.String())
			}
			if ok, _ := e.svc.Connected(context.Background(), "alice", routeID); ok {
				t.Error("connected")
			}
			if redirected.Load() != 0 {
				t.Error("the redirect was followed")
			}
			e.assertNoLeak(rec.Body.String())
			if strings.Contains(e.logs.String(), "stolen") {
				t.Error("a token from the redirect target is in the logs")
			}
		})
	}
}

func TestHostileProvider_Refresh(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	probe := newEnv(t, "header", nil)
	for name := range hostileModes(probe, &hits) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, first := connected(t, "header")
			e.svc.callTimeout = 500 * time.Millisecond
			var redirected atomic.Int32
			e.p.mu.Lock()
			e.p.hostile = hostileModes(e, &redirected)[name]
			e.p.mu.Unlock()
			e.clock.add(time.Hour - 30*time.Second)
			// Still valid: the old TI is used.
			ti, _, err := e.svc.Token(context.Background(), "alice", routeID)
			if err != nil || ti != first {
				t.Errorf("valid TI: %q %v", ti, err)
			}
			waitNoFlight(t, e.svc)
			// Expired: a transient error; the TI stays for when the provider recovers.
			e.clock.add(time.Minute)
			_, _, err = e.svc.Token(context.Background(), "alice", routeID)
			if err == nil || errors.Is(err, ErrUpstreamRequired) {
				t.Errorf("expired TI: %v", err)
			}
			if ok, _ := e.svc.Connected(context.Background(), "alice", routeID); !ok {
				t.Error("the TI was removed")
			}
			if redirected.Load() != 0 {
				t.Error("the redirect was followed")
			}
			e.assertNoLeak(fmt.Sprint(err))
		})
	}
}

// waitNoFlight waits until s has no refresh in flight.
func waitNoFlight(t *testing.T, s *Service) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		n := len(s.flights)
		s.mu.Unlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("refresh still in flight")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
