package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// The benchmark measures what it says: through the gateway every request is a tools/call the
// filter allowed with a cached token (the upstream gets the identity assertion and never the
// token), a request the filter refuses fails the run, and the bare proxy reaches the same
// upstream.
func TestBench_MeasuresAllowedCallsThroughTheFilter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := newStack(ctx, stackOptions{module: wasmbuild.Module(t), workers: 2, logLevel: host.LogInfo, size: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if len(s.body) != 1024 {
		t.Fatalf("request body of %d bytes, want 1024", len(s.body))
	}
	l := newLoader(2, s.token, s.body, s.up.result)
	f, err := l.run(ctx, s.gwURL, 300*time.Millisecond)
	if err != nil || f.Requests == 0 || f.P50 <= 0 || f.P99 < f.P50 || f.PerSec <= 0 {
		t.Fatalf("through the gateway: %+v, %v", f, err)
	}
	if got := s.up.requests.Load(); got != int64(f.Requests) {
		t.Errorf("the upstream answered %d requests, the clients counted %d", got, f.Requests)
	}
	if c := s.checks.Load(); c < 1 || c > 4 {
		t.Errorf("%d check API calls for 2 clients on 2 VMs, want the token cached after the first on each", c)
	}
	if a, n := s.up.sawAuthorization.Load(), s.up.sawNoAssertion.Load(); a != 0 || n != 0 {
		t.Errorf("through the gateway %d requests carried Authorization and %d no assertion", a, n)
	}

	refused := newLoader(1, "not-a-token", s.body, s.up.result)
	if _, err := refused.run(ctx, s.gwURL, 50*time.Millisecond); !errors.Is(err, errAnswer) || !strings.Contains(err.Error(), "401") {
		t.Errorf("an unknown token: %v, want a 401 failing the run", err)
	}

	before := s.up.requests.Load()
	if f, err := l.run(ctx, s.bareURL, 100*time.Millisecond); err != nil || s.up.requests.Load()-before != int64(f.Requests) {
		t.Errorf("through the bare proxy: %+v, %v", f, err)
	}
}

func TestRun_RefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-mode", "sideways"},
		{"-wasm-log-level", "loud"},
		{"-clients", "0"},
		{"-size", "10"},
		{"-log-format", "xml"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 || errOut.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut.String())
		}
	}
}

func TestQuantileAndMedian(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	sorted := []time.Duration{}
	for i := 1; i <= 100; i++ {
		sorted = append(sorted, ms(i))
	}
	if q := quantile(sorted, 0.5); q != ms(50) {
		t.Errorf("p50 = %v", q)
	}
	if q := quantile(sorted, 0.99); q != ms(99) {
		t.Errorf("p99 = %v", q)
	}
	if q := quantile(sorted[:1], 0.99); q != ms(1) {
		t.Errorf("p99 of one = %v", q)
	}
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median = %v", m)
	}
}
