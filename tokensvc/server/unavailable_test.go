package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// downStore is a memory store whose credential look-ups fail while down is set, as a
// store does while its database is unreachable.
type downStore struct {
	*memory.Store
	down atomic.Bool
}

var errDown = errors.New("connect: connection refused")

func (d *downStore) GetAccessToken(ctx context.Context, h []byte, now time.Time) (store.AccessToken, error) {
	if d.down.Load() {
		return store.AccessToken{}, errDown
	}
	return d.Store.GetAccessToken(ctx, h, now)
}

func (d *downStore) GetBrowserCookie(ctx context.Context, h []byte, host string, now time.Time) (store.BrowserCookie, store.Session, error) {
	if d.down.Load() {
		return store.BrowserCookie{}, store.Session{}, errDown
	}
	return d.Store.GetBrowserCookie(ctx, h, host, now)
}

// A store failure during a check is answered 503 with the generic error status, which the
// filter turns into 503 for the client: never 401 (a client would throw its token away),
// never a decision. When the store is back, the same token passes.
func TestCheck_StoreFailureIsUnavailable(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(testConfigYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.New()
	ds := &downStore{Store: mem}
	e := &testEnv{t: t, cfg: cfg, store: mem, clock: &testClock{t: time.Unix(1_700_000_000, 0)}}
	e.srv, err = New(context.Background(), cfg, WithStore(ds), WithConnector(newIDP()),
		WithClock(e.clock.now), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.srv.Close() })
	alice := e.session("alice")
	tok := e.token(alice, demoRoute, time.Hour)
	ds.down.Store(true)
	for _, req := range []checkapi.Request{
		{RouteID: demoRoute, Host: "mcp.example.com", Token: tok},
		{RouteID: appRoute, Host: "app.example.com", Cookie: e.cookie(alice, "app.example.com")},
	} {
		status, resp := e.check(req)
		if status != http.StatusServiceUnavailable || checkapi.HTTPStatus(resp.Status) != 0 || resp.Identity != nil {
			t.Errorf("check with the store down: %d %+v, want 503 without a decision", status, resp)
		}
	}
	ds.down.Store(false)
	if status, _ := e.check(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: tok}); status != http.StatusOK {
		t.Fatalf("check after the store is back: %d", status)
	}
}
