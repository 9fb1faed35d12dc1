package assertion

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// vectors is sdk/testdata/vectors.json, written by the token service's signer
// (tokensvc/assertion's TestVectors_UpdateOrCheck).
type vectors struct {
	Issuer        string          `json:"issuer"`
	Audience      string          `json:"audience"`
	Now           int64           `json:"now"`
	LeewaySeconds int             `json:"leeway_seconds"`
	JWKS          json.RawMessage `json:"jwks"`
	Cases         []struct {
		Name   string         `json:"name"`
		Token  string         `json:"token"`
		Valid  bool           `json:"valid"`
		Reason Reason         `json:"reason"`
		Claims map[string]any `json:"claims"`
	} `json:"cases"`
}

func loadVectors(t *testing.T) vectors {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) == 0 {
		t.Fatal("no cases")
	}
	return v
}

// jwksServer serves doc with cacheControl and counts the fetches.
type jwksServer struct {
	*httptest.Server
	fetches atomic.Int32
	mu      sync.Mutex
	doc     []byte
	status  int
}

func newJWKSServer(t *testing.T, doc []byte, cacheControl string) *jwksServer {
	t.Helper()
	s := &jwksServer{doc: doc, status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		if cacheControl != "" {
			w.Header().Set("Cache-Control", cacheControl)
		}
		w.WriteHeader(s.status)
		w.Write(s.doc)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(status int, doc []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.doc = status, doc
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newVerifier(t *testing.T, v vectors, url string, clk *clock) *Verifier {
	t.Helper()
	ver, err := NewVerifier(Config{
		JWKSURL: url + "/.well-known/gateway/jwks.json", Issuer: v.Issuer, Audience: v.Audience,
		Leeway: time.Duration(v.LeewaySeconds) * time.Second, Now: clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return ver
}

func TestVerify_SharedVectors(t *testing.T) {
	v := loadVectors(t)
	srv := newJWKSServer(t, v.JWKS, "public, max-age=3600")
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			ver := newVerifier(t, v, srv.URL, &clock{now: time.Unix(v.Now, 0)})
			id, err := ver.Verify(context.Background(), c.Token)
			if !c.Valid {
				if err == nil || ReasonOf(err) != c.Reason {
					t.Fatalf("got %v (identity %+v), want refusal %q", err, id, c.Reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("valid assertion refused: %v", err)
			}
			if id.Subject != c.Claims["sub"] || id.Email != c.Claims["email"] || id.Name != c.Claims["name"] ||
				fmt.Sprint(id.Groups) != fmt.Sprint(c.Claims["groups"]) || id.Issuer != v.Issuer || id.Audience != v.Audience {
				t.Errorf("identity %+v, want claims %v", id, c.Claims)
			}
			for k, want := range c.Claims {
				got, _ := json.Marshal(id.Claims[k])
				if w, _ := json.Marshal(want); string(got) != string(w) {
					t.Errorf("claim %s = %s, want %v", k, got, want)
				}
			}
		})
	}
}

func vectorToken(t *testing.T, v vectors, name string) string {
	t.Helper()
	for _, c := range v.Cases {
		if c.Name == name {
			return c.Token
		}
	}
	t.Fatalf("no vector %q", name)
	return ""
}

func TestVerify_UnknownKidRefreshesAtMostOncePerInterval(t *testing.T) {
	v := loadVectors(t)
	srv := newJWKSServer(t, v.JWKS, "max-age=3600")
	clk := &clock{now: time.Unix(v.Now, 0)}
	ver := newVerifier(t, v, srv.URL, clk)
	ctx := context.Background()
	if _, err := ver.Verify(ctx, vectorToken(t, v, "valid")); err != nil {
		t.Fatal(err)
	}
	unknown := vectorToken(t, v, "unknown_kid")
	steps := []struct {
		advance     time.Duration
		wantFetches int32
	}{
		{0, 1},                      // the first fetch is younger than the interval: no refresh
		{MinRefreshInterval, 2},     // one refresh, the kid is still unknown
		{MinRefreshInterval / 2, 2}, // rate limited
		{MinRefreshInterval / 2, 3}, // the interval has passed again
	}
	for i, s := range steps {
		clk.advance(s.advance)
		if _, err := ver.Verify(ctx, unknown); ReasonOf(err) != ReasonUnknownKey {
			t.Fatalf("step %d: %v, want unknown_kid", i, err)
		}
		if got := srv.fetches.Load(); got != s.wantFetches {
			t.Fatalf("step %d: %d fetches, want %d", i, got, s.wantFetches)
		}
	}
}

func TestVerify_RotatedKeyIsFoundByRefresh(t *testing.T) {
	v := loadVectors(t)
	// The server first publishes a set without the signing key (only an unrelated key).
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	json.Unmarshal(v.JWKS, &set)
	stale := map[string]any{}
	for k, val := range set.Keys[0] {
		stale[k] = val
	}
	stale["kid"] = "old-key"
	staleDoc, _ := json.Marshal(map[string]any{"keys": []any{stale}})
	srv := newJWKSServer(t, staleDoc, "max-age=3600")
	clk := &clock{now: time.Unix(v.Now, 0)}
	ver := newVerifier(t, v, srv.URL, clk)
	if _, err := ver.Verify(context.Background(), vectorToken(t, v, "valid")); ReasonOf(err) != ReasonUnknownKey {
		t.Fatalf("%v, want unknown_kid", err)
	}
	srv.set(http.StatusOK, v.JWKS)
	clk.advance(MinRefreshInterval)
	if id, err := ver.Verify(context.Background(), vectorToken(t, v, "valid")); err != nil || id.Email != "alice@example.com" {
		t.Fatalf("after rotation: %v %+v", err, id)
	}
}

func TestVerify_CacheFollowsMaxAge(t *testing.T) {
	v := loadVectors(t)
	tests := []struct {
		cacheControl string
		after        time.Duration
		wantFetches  int32
	}{
		{"public, max-age=3600", 59 * time.Minute, 1},
		{"public, max-age=3600", 61 * time.Minute, 2},
		{"max-age=60", 2 * time.Minute, 2},
		{"no-store", time.Second, 2},
		{"", DefaultCacheTTL - time.Second, 1},
		{"", DefaultCacheTTL, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q after %s", tt.cacheControl, tt.after), func(t *testing.T) {
			srv := newJWKSServer(t, v.JWKS, tt.cacheControl)
			// The clock starts early enough that the valid vector is still valid after the wait.
			clk := &clock{now: time.Unix(v.Now, 0)}
			ver := newVerifier(t, v, srv.URL, clk)
			ver.cfg.Leeway = 2 * time.Hour
			for range 2 {
				if _, err := ver.Verify(context.Background(), vectorToken(t, v, "valid")); err != nil {
					t.Fatal(err)
				}
				clk.advance(tt.after)
			}
			if got := srv.fetches.Load(); got != tt.wantFetches {
				t.Fatalf("%d fetches, want %d", got, tt.wantFetches)
			}
		})
	}
}

func TestVerify_JWKSUnavailableFailsClosed(t *testing.T) {
	v := loadVectors(t)
	tests := []struct {
		name   string
		status int
		doc    string
	}{
		{"server error", http.StatusInternalServerError, "oops"},
		{"not JSON", http.StatusOK, "<html>"},
		{"no EC key", http.StatusOK, `{"keys":[{"kty":"RSA","kid":"r","n":"AQAB","e":"AQAB"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newJWKSServer(t, []byte(tt.doc), "")
			srv.set(tt.status, []byte(tt.doc))
			ver := newVerifier(t, v, srv.URL, &clock{now: time.Unix(v.Now, 0)})
			_, err := ver.Verify(context.Background(), vectorToken(t, v, "valid"))
			if ReasonOf(err) != ReasonJWKSUnavailable || !strings.Contains(err.Error(), "cannot fetch the JWKS") {
				t.Fatalf("%v, want a jwks refusal", err)
			}
		})
	}
	t.Run("unreachable, then back", func(t *testing.T) {
		srv := newJWKSServer(t, v.JWKS, "")
		url := srv.URL
		srv.Close()
		ver := newVerifier(t, v, url, &clock{now: time.Unix(v.Now, 0)})
		if _, err := ver.Verify(context.Background(), vectorToken(t, v, "valid")); ReasonOf(err) != ReasonJWKSUnavailable {
			t.Fatalf("%v, want jwks", err)
		}
	})
}

func TestMiddleware(t *testing.T) {
	v := loadVectors(t)
	srv := newJWKSServer(t, v.JWKS, "")
	ver := newVerifier(t, v, srv.URL, &clock{now: time.Unix(v.Now, 0)})
	h := ver.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := FromContext(r.Context())
		fmt.Fprintf(w, "hello %s %v", id.Email, id.Groups)
	}))
	valid := vectorToken(t, v, "valid")
	tests := []struct {
		name       string
		headers    []string
		wantStatus int
		wantBody   string
	}{
		{"valid", []string{valid}, 200, "hello alice@example.com [admins staff]"},
		{"missing", nil, 401, "no X-Gateway-Assertion header"},
		{"duplicated", []string{valid, valid}, 401, "2 X-Gateway-Assertion headers"},
		{"joined by a proxy", []string{valid + ", " + valid}, 401, "2 X-Gateway-Assertion headers"},
		{"wrong audience", []string{vectorToken(t, v, "wrong_audience")}, 401, "assertion: audience"},
		{"alg none", []string{vectorToken(t, v, "alg_none")}, 401, "only ES256 is accepted"},
		{"oversized", []string{vectorToken(t, v, "oversized")}, 401, "assertion: oversized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			for _, hv := range tt.headers {
				req.Header.Add(HeaderName, hv)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != tt.wantStatus || !strings.Contains(string(body), tt.wantBody) {
				t.Fatalf("%d %q, want %d containing %q", rec.Code, body, tt.wantStatus, tt.wantBody)
			}
		})
	}
}

func TestNewVerifier_RequiresConfig(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Issuer: "i", Audience: "a"}, "JWKSURL"},
		{Config{JWKSURL: "u", Issuer: "i"}, "Audience"},
		{Config{JWKSURL: "u", Audience: "a"}, "Issuer"},
	}
	for _, tt := range tests {
		if _, err := NewVerifier(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want an error about %s", tt.cfg, err, tt.want)
		}
	}
	if _, err := NewVerifier(Config{JWKSURL: "u", Audience: "a", AnyIssuer: true}); err != nil {
		t.Error(err)
	}
}

func TestVerify_ConcurrentFirstUseFetchesOnce(t *testing.T) {
	v := loadVectors(t)
	srv := newJWKSServer(t, v.JWKS, "max-age=3600")
	ver := newVerifier(t, v, srv.URL, &clock{now: time.Unix(v.Now, 0)})
	valid := vectorToken(t, v, "valid")
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			if _, err := ver.Verify(context.Background(), valid); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := srv.fetches.Load(); got != 1 {
		t.Errorf("%d fetches, want 1", got)
	}
}
