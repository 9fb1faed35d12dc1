package idp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// health tracks whether the provider answers, so that a sign-in started while it is down
// gets the 503 page at once instead of a redirect to a provider that does not answer, and
// gets it until the provider is back. It is shared by every connector kind: a connector calls
// check before it sends a browser to the provider, up after any answer, and seen with the
// error of each call to the provider (an ErrUnavailable marks the provider down).
//
// While the provider was heard from within the health interval, check answers at once.
// Otherwise check probes (one GET, any answer below 500 counts as up), at most once per
// retry interval while it is down, returning the last failure meanwhile.
type health struct {
	probe    func(context.Context) error
	now      func() time.Time
	interval time.Duration
	retry    time.Duration

	mu      sync.Mutex
	lastOK  time.Time
	lastTry time.Time
	lastErr error
	probing bool
}

func newHealth(o options, probe func(context.Context) error) *health {
	return &health{probe: probe, now: o.now, interval: o.healthInterval, retry: o.retryInterval}
}

// up records an answer from the provider at t.
func (h *health) up(t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastOK, h.lastErr = t, nil
}

// seen records the outcome of a call to the provider and returns err unchanged.
func (h *health) seen(err error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err == nil:
		h.lastOK, h.lastErr = h.now(), nil
	case errors.Is(err, ErrUnavailable):
		h.lastOK, h.lastErr, h.lastTry = time.Time{}, err, h.now()
	}
	return err
}

// check returns nil when the provider answers, or an error wrapping ErrUnavailable.
func (h *health) check(ctx context.Context) error {
	h.mu.Lock()
	now := h.now()
	if !h.lastOK.IsZero() && now.Sub(h.lastOK) < h.interval {
		h.mu.Unlock()
		return nil
	}
	if h.lastErr != nil && now.Sub(h.lastTry) < h.retry || h.probing {
		err := h.lastErr
		h.mu.Unlock()
		if err == nil {
			return nil // another request is probing a provider last seen up
		}
		return err
	}
	h.probing, h.lastTry = true, now
	h.mu.Unlock()

	err := h.probe(ctx)

	h.mu.Lock()
	defer h.mu.Unlock()
	h.probing = false
	if err != nil {
		h.lastOK, h.lastErr = time.Time{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
		return h.lastErr
	}
	h.lastOK, h.lastErr = h.now(), nil
	return nil
}

// probe GETs url: any answer below 500 means the provider is up (a rate limit or a 404 is
// still an answer); a 5xx, a timeout or no connection means it is down.
func probe(ctx context.Context, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("status %d from %s", resp.StatusCode, url)
	}
	return nil
}

// probeTimeout bounds a health probe: a sign-in waits for it.
const probeTimeout = 3 * time.Second
