package host

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// LogEntry is one captured log line.
type LogEntry struct {
	Time    time.Time
	Level   LogLevel
	Message string
	// Worker is the VM's worker index; Context the context id that logged (0: VM context).
	Worker  int
	Context uint32
	// Host marks lines written by the host about the VM (traps, proc_exit, misuse), as
	// opposed to lines the guest logged.
	Host bool
}

type logStore struct {
	mu      sync.Mutex
	entries []LogEntry
	changed chan struct{} // closed and replaced on every add
}

// defaultMaxLogEntries is Options.MaxLogEntries when unset.
const defaultMaxLogEntries = 100000

func (s *logStore) add(e LogEntry, h *Host) {
	s.mu.Lock()
	max := h.opts.MaxLogEntries
	if max <= 0 {
		max = defaultMaxLogEntries
	}
	if len(s.entries) >= max {
		keep := max / 2 // the newest half stays; with the new line, at most max
		s.entries = append(s.entries[:0], s.entries[len(s.entries)-keep:]...)
	}
	s.entries = append(s.entries, e)
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	s.mu.Unlock()
	if l := h.opts.Logger; l != nil {
		// The handler directly: no caller's PC to look up (runtime.Callers) for each line.
		ctx, lvl, hdl := context.Background(), slogLevel(e.Level), l.Handler()
		if !hdl.Enabled(ctx, lvl) {
			return
		}
		src := "wasm"
		if e.Host {
			src = "host"
		}
		r := slog.NewRecord(time.Now(), lvl, e.Message, 0)
		r.AddAttrs(slog.String("source", src), slog.String("plugin", h.opts.PluginName),
			slog.Int("worker", e.Worker), slog.Uint64("context", uint64(e.Context)))
		_ = hdl.Handle(ctx, r)
	}
}

func slogLevel(l LogLevel) slog.Level {
	switch l {
	case LogTrace:
		return slog.LevelDebug - 4
	case LogDebug:
		return slog.LevelDebug
	case LogInfo:
		return slog.LevelInfo
	case LogWarn:
		return slog.LevelWarn
	case LogError:
		return slog.LevelError
	}
	return slog.LevelError + 4
}

// Logs returns a copy of every captured log line, oldest first.
func (h *Host) Logs() []LogEntry {
	h.logs.mu.Lock()
	defer h.logs.mu.Unlock()
	return append([]LogEntry(nil), h.logs.entries...)
}

// GuestLogs returns the messages the guest logged at level or above, oldest first.
func (h *Host) GuestLogs(level LogLevel) []string {
	var out []string
	for _, e := range h.Logs() {
		if !e.Host && e.Level >= level {
			out = append(out, e.Message)
		}
	}
	return out
}

// WaitLog waits until a captured line contains substr, or ctx ends.
func (h *Host) WaitLog(ctx context.Context, substr string) (LogEntry, error) {
	seen := 0
	for {
		h.logs.mu.Lock()
		for ; seen < len(h.logs.entries); seen++ {
			if e := h.logs.entries[seen]; strings.Contains(e.Message, substr) {
				h.logs.mu.Unlock()
				return e, nil
			}
		}
		if h.logs.changed == nil {
			h.logs.changed = make(chan struct{})
		}
		ch := h.logs.changed
		h.logs.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return LogEntry{}, ctx.Err()
		}
	}
}

// ResetLogs drops every captured line.
func (h *Host) ResetLogs() {
	h.logs.mu.Lock()
	h.logs.entries = nil
	h.logs.mu.Unlock()
}

// MetricType is the kind of a metric.
type MetricType uint32

// Metric kinds of the ABI.
const (
	Counter   MetricType = metricCounter
	Gauge     MetricType = metricGauge
	Histogram MetricType = metricHistogram
)

// Metric is a snapshot of one metric defined by the guest. Metrics are shared by every VM of
// a host under their name (Envoy's stats are process-wide).
type Metric struct {
	Name  string
	Type  MetricType
	Value int64 // counter or gauge value; last recorded value for a histogram
	Count int64 // histogram: number of recorded values
	Sum   int64 // histogram: sum of recorded values
}

type metric struct {
	name string
	typ  MetricType
	mu   sync.Mutex
	val  int64
	cnt  int64
	sum  int64
}

type metricStore struct {
	mu           sync.Mutex
	byName       map[string]*metric
	hostFailures atomic.Int64
}

func (s *metricStore) init() { s.byName = map[string]*metric{} }

func (s *metricStore) get(typ MetricType, name string) *metric {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := string(rune('0'+typ)) + name
	m := s.byName[key]
	if m == nil {
		m = &metric{name: name, typ: typ}
		s.byName[key] = m
	}
	return m
}

// Metric returns the current value of the metric called name (any type).
func (h *Host) Metric(name string) (Metric, bool) {
	for _, m := range h.Metrics() {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// Metrics returns every metric the guest defined, sorted by name.
func (h *Host) Metrics() []Metric {
	h.metrics.mu.Lock()
	ms := make([]*metric, 0, len(h.metrics.byName))
	for _, m := range h.metrics.byName {
		ms = append(ms, m)
	}
	h.metrics.mu.Unlock()
	out := make([]Metric, 0, len(ms))
	for _, m := range ms {
		m.mu.Lock()
		out = append(out, Metric{Name: m.name, Type: m.typ, Value: m.val, Count: m.cnt, Sum: m.sum})
		m.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Name < out[j].Name || out[i].Name == out[j].Name && out[i].Type < out[j].Type
	})
	return out
}

// sharedData is cpp-host's SharedData for the host's vm_id: a key/value store with
// compare-and-swap tokens shared by every VM.
type sharedData struct {
	mu      sync.Mutex
	data    map[string]sharedValue
	nextCAS uint32
}

type sharedValue struct {
	value []byte
	cas   uint32
}

func (s *sharedData) init() { s.data = map[string]sharedValue{} }

func (s *sharedData) get(key string) ([]byte, uint32, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.data[key]
	return v.value, v.cas, ok
}

func (s *sharedData) set(key string, value []byte, cas uint32) Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.data[key]; ok && cas != 0 && cas != cur.cas {
		return StatusCASMismatch
	}
	s.nextCAS++
	if s.nextCAS == 0 {
		s.nextCAS++
	}
	s.data[key] = sharedValue{value: append([]byte(nil), value...), cas: s.nextCAS}
	return StatusOK
}

// SharedData returns the value and CAS token stored under key by the guest (or by
// SetSharedData).
func (h *Host) SharedData(key string) (value []byte, cas uint32, ok bool) {
	v, c, ok := h.shared.get(key)
	return append([]byte(nil), v...), c, ok
}

// SetSharedData stores value under key as proxy_set_shared_data would (cas 0: unconditional).
func (h *Host) SetSharedData(key string, value []byte, cas uint32) Status {
	return h.shared.set(key, value, cas)
}
