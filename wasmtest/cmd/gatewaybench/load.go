package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"
)

// figures are one load run's results.
type figures struct {
	Requests int
	P50, P99 time.Duration
	PerSec   float64
	// CPU is the process's CPU time (user and system: load generator, upstream and proxy
	// together) per request; less sensitive than wall-clock figures to other jobs on the
	// machine.
	CPU time.Duration
	// Allocs is the process's Go heap allocations per request (load generator, upstream and
	// proxy together; runtime.MemStats.Mallocs).
	Allocs float64
}

// mallocs is the number of Go heap allocations the process has made so far.
func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// cpuTime is the CPU time the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loader is the load generator: clients closed-loop clients on keep-alive connections, each
// sending the same tools/call and reading the whole answer before the next.
type loader struct {
	client  *http.Client
	clients int
	token   string
	body    []byte
	want    []byte // the answer every request must get
}

func newLoader(clients int, token string, body, want []byte) *loader {
	return &loader{
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients, DisableCompression: true,
		}},
		clients: clients, token: token, body: body, want: want,
	}
}

// errAnswer is a request that did not get the upstream's answer.
var errAnswer = errors.New("unexpected answer")

// once sends one request to url and checks its answer.
func (l *loader) once(ctx context.Context, url string, buf *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(l.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+l.token)
	resp, err := l.client.Do(req)
	if err != nil {
		return err
	}
	buf.Reset()
	_, err = io.Copy(buf, resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Equal(buf.Bytes(), l.want) {
		return fmt.Errorf("%w: %d %.200q", errAnswer, resp.StatusCode, buf.Bytes())
	}
	return nil
}

// run sends requests to url from every client for d and returns the figures. Any request
// that fails or gets another answer than the upstream's fails the run.
func (l *loader) run(ctx context.Context, url string, d time.Duration) (figures, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		all      []time.Duration
		firstErr error
	)
	allocs0 := mallocs()
	start, cpu0 := time.Now(), cpuTime()
	deadline := start.Add(d)
	for range l.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			var buf bytes.Buffer
			var err error
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				if err = l.once(ctx, url, &buf); err != nil {
					break
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			all = append(all, lat...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	allocs := mallocs() - allocs0
	if firstErr != nil {
		return figures{}, firstErr
	}
	if len(all) == 0 {
		return figures{}, errors.New("no request completed")
	}
	slices.Sort(all)
	return figures{
		Requests: len(all),
		P50:      quantile(all, 0.50),
		P99:      quantile(all, 0.99),
		PerSec:   float64(len(all)) / elapsed.Seconds(),
		CPU:      cpu / time.Duration(len(all)),
		Allocs:   float64(allocs) / float64(len(all)),
	}, nil
}

// quantile returns the q-quantile of sorted (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// median returns the median of xs (the lower middle for an even count).
func median[T int | float64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
