package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// brokenStore is a store whose reads fail (down) or hang until the caller gives up (slow).
type brokenStore struct {
	*memory.Store
	slow bool
}

func (b brokenStore) GetClient(ctx context.Context, _ string, _ time.Time) (store.Client, error) {
	if b.slow {
		<-ctx.Done()
		return store.Client{}, ctx.Err()
	}
	return store.Client{}, errors.New("connection refused")
}

func TestReady_BothListeners(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name         string
		st           store.Store
		idpDown      bool
		wantStatus   int
		wantNotReady map[string]bool
	}{
		{"ready", memory.New(), false, http.StatusOK, nil},
		{"identity provider never discovered", memory.New(), true, http.StatusServiceUnavailable, map[string]bool{"identity_provider": true}},
		{"store failing", brokenStore{Store: memory.New()}, false, http.StatusServiceUnavailable, map[string]bool{"store": true}},
		{"store hanging", brokenStore{Store: memory.New(), slow: true}, false, http.StatusServiceUnavailable, map[string]bool{"store": true}},
		{"both", brokenStore{Store: memory.New()}, true, http.StatusServiceUnavailable, map[string]bool{"store": true, "identity_provider": true}},
	}
	cfg, err := config.Parse([]byte(testConfigYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			provider := newIDP()
			provider.Unavailable = tc.idpDown
			srv, err := New(context.Background(), cfg, WithStore(tc.st), WithConnector(provider), WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			for name, h := range map[string]http.Handler{"public": srv.PublicHandler(), "internal": srv.InternalHandler()} {
				// Any Host: kubelet probes use the pod IP.
				r := httptest.NewRequest(http.MethodGet, "http://10.0.0.7:8080"+paths.Ready, nil)
				ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout+3*time.Second)
				rec := httptest.NewRecorder()
				start := time.Now()
				h.ServeHTTP(rec, r.WithContext(ctx))
				cancel()
				if d := time.Since(start); d > ReadyTimeout+time.Second {
					t.Errorf("%s: readiness took %v", name, d)
				}
				var body struct {
					Ready    bool              `json:"ready"`
					NotReady map[string]string `json:"not_ready"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
					t.Fatalf("%s: body %q: %v", name, rec.Body, err)
				}
				if rec.Code != tc.wantStatus || body.Ready != (tc.wantStatus == http.StatusOK) || len(body.NotReady) != len(tc.wantNotReady) {
					t.Errorf("%s: %d %+v, want %d naming %v", name, rec.Code, body, tc.wantStatus, tc.wantNotReady)
				}
				for k := range tc.wantNotReady {
					if body.NotReady[k] == "" {
						t.Errorf("%s: not_ready lacks %q: %+v", name, k, body.NotReady)
					}
				}
			}
		})
	}
}
