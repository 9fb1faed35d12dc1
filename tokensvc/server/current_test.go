package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/obs"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// gatedStore holds GetClient until gate is closed.
type gatedStore struct {
	*memory.Store
	entered chan struct{}
	gate    chan struct{}
}

func (g gatedStore) GetClient(ctx context.Context, id string, now time.Time) (store.Client, error) {
	g.entered <- struct{}{}
	<-g.gate
	return g.Store.GetClient(ctx, id, now)
}

// A request in flight when the server is swapped finishes on the old server; requests after
// the swap are answered by the new one, even while the old one is still busy.
func TestCurrent_SwapLetsInFlightRequestsFinishOnTheOldServer(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(testConfigYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	quiet := WithLogger(slog.New(slog.DiscardHandler))
	gated := gatedStore{Store: memory.New(), entered: make(chan struct{}, 1), gate: make(chan struct{})}
	oldMetrics, newMetrics := obs.NewMetrics(), obs.NewMetrics()
	oldSrv, err := New(context.Background(), cfg, WithStore(gated), WithConnector(newIDP()), WithMetrics(oldMetrics), quiet)
	if err != nil {
		t.Fatal(err)
	}
	newSrv, err := New(context.Background(), cfg, WithStore(memory.New()), WithConnector(newIDP()), WithMetrics(newMetrics), quiet)
	if err != nil {
		t.Fatal(err)
	}
	cur := NewCurrent(oldSrv)
	ready := func() int {
		rec := httptest.NewRecorder()
		cur.InternalHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://x"+paths.Ready, nil))
		return rec.Code
	}
	inFlight := make(chan int, 1)
	go func() { inFlight <- ready() }()
	<-gated.entered // the request is in the old server's store call
	if prev := cur.Swap(newSrv); prev != oldSrv {
		t.Fatal("Swap did not return the old server")
	}
	if code := ready(); code != http.StatusOK {
		t.Fatalf("after the swap: %d", code)
	}
	close(gated.gate)
	if code := <-inFlight; code != http.StatusOK {
		t.Fatalf("the in-flight request: %d", code)
	}
	count := func(m *obs.Metrics) float64 {
		n, err := testutil.GatherAndCount(m.Registry(), "mcp_gateway_tokensvc_http_requests_total")
		if err != nil {
			t.Fatal(err)
		}
		return float64(n)
	}
	if count(oldMetrics) != 1 || count(newMetrics) != 1 {
		t.Errorf("request series: old %v, new %v; want one each", count(oldMetrics), count(newMetrics))
	}
	if cur.Load() != newSrv {
		t.Error("Load does not return the new server")
	}
}
