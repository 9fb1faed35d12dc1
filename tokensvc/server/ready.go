package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

// ReadyTimeout bounds each readiness check (the store read, the discovery attempt).
const ReadyTimeout = 2 * time.Second

// readyProbeClientID is the client the readiness probe looks up: it never exists, so the
// store answers ErrNotFound when it works.
const readyProbeClientID = "readyz-probe"

// readiness is the body of a readiness answer.
type readiness struct {
	Ready bool `json:"ready"`
	// NotReady names what is not ready ("store", "identity_provider") with why.
	NotReady map[string]string `json:"not_ready,omitempty"`
}

// Ready reports what is not ready: the store (a read that must answer within ReadyTimeout)
// and the identity provider (its discovery must have succeeded at least once; a connector
// without discovery is always ready). An empty map means ready.
func (s *Server) Ready(ctx context.Context) map[string]string {
	notReady := map[string]string{}
	sctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	if _, err := s.rawStore.GetClient(sctx, readyProbeClientID, s.now()); err != nil && !errors.Is(err, store.ErrNotFound) {
		notReady["store"] = "the store did not answer: " + errorClass(sctx, err)
	}
	dctx, cancel2 := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel2()
	if err := s.connector.Discover(dctx); err != nil {
		notReady["identity_provider"] = "discovery has not succeeded yet"
	}
	return notReady
}

// errorClass says why a check failed without echoing backend details (DSNs, paths).
func errorClass(ctx context.Context, err error) string {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	return "error"
}

// ready is the readiness probe: 200 {"ready":true}, or 503 naming what is not ready.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	notReady := s.Ready(r.Context())
	if len(notReady) == 0 {
		writeJSON(w, http.StatusOK, readiness{Ready: true})
		return
	}
	s.log.WarnContext(r.Context(), "not ready", "not_ready", notReady)
	writeJSON(w, http.StatusServiceUnavailable, readiness{NotReady: notReady})
}
