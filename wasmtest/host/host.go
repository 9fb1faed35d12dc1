package host

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Compat selects which generation of proxy-wasm-cpp-host (Envoy's Wasm host) to emulate.
type Compat int

const (
	// CompatCurrent emulates cpp-host from 94091cd (#533) on (envoyproxy/envoy#45756,
	// reported as Envoy ≥ 1.39): poll_oneoff succeeds with no events, every WASI function is
	// linked, and the start-up and allocator allowlists include poll_oneoff.
	CompatCurrent Compat = iota
	// CompatLegacy emulates cpp-host from #427 up to #533 (older Envoy and Istio, reported
	// as Envoy ≥ 1.33): poll_oneoff answers ENOSYS, which the Go runtime treats as fatal, and
	// only the WASI functions of #427 are linked.
	CompatLegacy
	compatModes
)

// FailStrategy is what happens to streams once a VM has failed, as Istio's failStrategy.
type FailStrategy int

const (
	// FailClose answers every stream of a failed VM with 503 (Envoy's "wasm_fail_stream").
	FailClose FailStrategy = iota
	// FailOpen skips the plugin: streams of a failed VM pass through untouched.
	FailOpen
	// FailReload fails the stream that was running closed, and starts a new VM for the
	// worker when the next stream begins (Istio FAIL_RELOAD).
	FailReload
)

// CallFailureMode selects how a failed proxy_http_call is reported to the guest.
type CallFailureMode int

const (
	// CallFailureEnvoy reports failures as Envoy's async client does: a timeout arrives as a
	// synthetic 504 "upstream request timeout" response and a connection failure as a 503
	// "upstream connect error ..." response, both with headers; only a reset after the
	// response started arrives with zero headers.
	CallFailureEnvoy CallFailureMode = iota
	// CallFailureReset reports every failure as proxy_on_http_call_response with zero
	// headers, and proxy_get_status BROKEN_CONNECTION "reset".
	CallFailureReset
)

// Cluster is the destination of proxy_http_call for one cluster name.
type Cluster struct {
	// URL is the base URL ("http://127.0.0.1:8081", optionally with a path prefix) the
	// call's :path is appended to. The :authority header becomes the Host header.
	URL string
	// Handler, if set, serves the calls in-process instead of URL.
	Handler http.Handler
}

// Options configure a Host. The zero value is usable: one worker, fail closed, current
// cpp-host behaviour, every log line kept, no clusters.
type Options struct {
	// Workers is the number of VMs (Envoy worker threads); default 1.
	Workers int
	// PluginName, RootID and VMID are the plugin's name, root_id and vm_id (properties
	// plugin_name, plugin_root_id, plugin_vm_id). Defaults: "plugin", "", "".
	PluginName, RootID, VMID string
	// PluginConfig is the plugin configuration (PluginConfig.configuration), read with
	// PLUGIN_CONFIGURATION in proxy_on_configure.
	PluginConfig []byte
	// VMConfig is the VM configuration, read with VM_CONFIGURATION in proxy_on_vm_start.
	VMConfig []byte
	// Env is the WASI environment (Envoy vm_config.environment_variables), e.g. GOGC.
	Env map[string]string
	// Compat selects the cpp-host generation; see Compat.
	Compat Compat
	// FailStrategy selects what happens once a VM fails; see FailStrategy.
	FailStrategy FailStrategy
	// AllowOnHeadersStopIteration is Envoy's PluginConfig.allow_on_headers_stop_iteration.
	// When false (Envoy's default) a Pause from proxy_on_*_headers stops the whole stream,
	// body included, until proxy_continue_stream; when true it holds only the headers and the
	// body still reaches the filter.
	AllowOnHeadersStopIteration bool
	// BufferLimit is the most body bytes buffered for the filter per direction before the
	// request is answered 413 (Envoy's per-connection buffer limit); default 1 MiB.
	BufferLimit int
	// Clusters maps proxy_http_call cluster names to destinations. An unknown cluster is
	// BAD_ARGUMENT, as in Envoy.
	Clusters map[string]Cluster
	// HTTPClient sends calls to Cluster.URL; default a client without a global timeout.
	HTTPClient *http.Client
	// CallFailures selects how failed calls are reported; see CallFailureMode.
	CallFailures CallFailureMode
	// MaxCallResponseBytes bounds a call's response body; larger responses fail. Default
	// 4 MiB.
	MaxCallResponseBytes int
	// LogLevel is the proxy's log level: guest messages below it are dropped, and
	// proxy_get_log_level returns it. The zero value, LogTrace, keeps everything; Envoy's
	// own default is LogInfo.
	LogLevel LogLevel
	// MaxLogEntries bounds the log lines kept for Logs and WaitLog (the oldest half goes when
	// full); default 100,000, which tests reading whole runs need. A long-running process that
	// only waits for recent lines sets a small bound: at info level each request leaves a
	// line of a few hundred bytes.
	MaxLogEntries int
	// Logger, if set, also receives every captured log line.
	Logger *slog.Logger
	// IdleWorkerFirst starts a stream that is not pinned to a worker on the first worker,
	// from the round-robin position on, whose VM is not running a callback at that moment,
	// and round robin only when every VM is busy; so streams wait less for each other's
	// callbacks (Envoy's workers each run their own connections). A stream stays on its
	// VM until it ends. Default: round robin.
	IdleWorkerFirst bool
	// ManualTicks disables the tickers started by proxy_set_tick_period_milliseconds; tests
	// then call Host.Tick.
	ManualTicks bool
	// Now is the proxy's clock (proxy_get_current_time_nanoseconds, WASI clocks); default
	// time.Now.
	Now func() time.Time
	// Rand is the source of random_get; default crypto/rand.
	Rand io.Reader
	// TraceSchedulerCalls counts the Go scheduler's poll_oneoff and sched_yield calls by the
	// guest exports in progress and what was waited for (Host.SchedulerCalls), to find which
	// callbacks need a working poll_oneoff.
	TraceSchedulerCalls bool
	// Properties adds or overrides property values by dotted path ("node.id",
	// "xds.cluster_name"); StreamInfo.Properties overrides them per stream.
	Properties map[string][]byte
}

// Host is a proxy-wasm host: a pool of VMs running one plugin, with Envoy's semantics for
// HTTP streams, callouts, shared data, metrics, ticks and logs.
type Host struct {
	mod  *Module
	opts Options
	env  []string // "KEY=VALUE", sorted

	ctx    context.Context // cancelled by Close; parent of callouts
	cancel context.CancelFunc
	wg     sync.WaitGroup // callouts and tickers

	workers []*worker
	next    atomic.Uint32

	start     time.Time
	logs      logStore
	metrics   metricStore
	shared    sharedData
	pollCalls atomic.Int64
	sched     schedTrace

	closeOnce sync.Once
	closed    atomic.Bool
}

// worker holds the current VM of one worker; the VM is replaced under FailReload.
type worker struct {
	mu  sync.Mutex
	vm  *vm
	gen int
}

// New starts opts.Workers VMs of m and starts the plugin in each. It fails if the module
// needs imports this Compat mode lacks, if a VM traps during start-up, or with
// ErrStartFailed if proxy_on_vm_start or proxy_on_configure returns false.
func New(ctx context.Context, m *Module, opts Options) (*Host, error) {
	if m == nil {
		return nil, errors.New("new host: nil module")
	}
	if opts.Compat < 0 || opts.Compat >= compatModes {
		return nil, fmt.Errorf("new host: unknown Compat %d", opts.Compat)
	}
	if err := m.checkCompat(opts.Compat); err != nil {
		return nil, fmt.Errorf("new host: %w", err)
	}
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	if opts.PluginName == "" {
		opts.PluginName = "plugin"
	}
	if opts.BufferLimit <= 0 {
		opts.BufferLimit = 1 << 20
	}
	if opts.MaxCallResponseBytes <= 0 {
		opts.MaxCallResponseBytes = 4 << 20
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	h := &Host{mod: m, opts: opts, start: opts.Now()}
	for k, val := range opts.Env {
		h.env = append(h.env, k+"="+val)
	}
	sort.Strings(h.env)
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.metrics.init()
	h.shared.init()
	for i := 0; i < opts.Workers; i++ {
		v, err := h.startVM(ctx, i, 0)
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("start VM %d: %w", i, err)
		}
		h.workers = append(h.workers, &worker{vm: v})
	}
	return h, nil
}

// Module returns the module the host runs.
func (h *Host) Module() *Module { return h.mod }

// Workers returns the number of workers (VMs).
func (h *Host) Workers() int { return len(h.workers) }

// pickWorker returns the VM for a new stream, round robin, recreating a failed VM first
// under FailReload.
func (h *Host) pickWorker(ctx context.Context, want int) (*vm, error) {
	if h.closed.Load() {
		return nil, ErrClosed
	}
	i := want
	if i < 0 || i >= len(h.workers) {
		i = int(h.next.Add(1)-1) % len(h.workers)
	}
	w := h.workers[i]
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.vm.failed.Load() && h.opts.FailStrategy == FailReload {
		nv, err := h.startVM(ctx, i, w.gen+1)
		if err != nil {
			h.logs.add(LogEntry{Time: h.now(), Level: LogError, Message: "reload VM: " + err.Error(), Worker: i, Host: true}, h)
			return w.vm, nil // the failed VM answers the stream 503
		}
		old := w.vm
		w.vm, w.gen = nv, w.gen+1
		old.mu.Lock()
		old.closeLocked()
		old.mu.Unlock()
	}
	return w.vm, nil
}

// noteFailure is called once per failed VM.
func (h *Host) noteFailure(v *vm, err *TrapError) {
	h.metrics.hostFailures.Add(1)
}

// Failures returns how many VMs have failed since the host started.
func (h *Host) Failures() int64 { return h.metrics.hostFailures.Load() }

// Failed reports whether the current VM of worker i has failed, and why.
func (h *Host) Failed(i int) (bool, error) {
	w := h.workers[i]
	w.mu.Lock()
	v := w.vm
	w.mu.Unlock()
	if v.failed.Load() {
		v.mu.Lock()
		defer v.mu.Unlock()
		return true, v.failErr
	}
	return false, nil
}

// Generation returns how many times worker i's VM has been recreated (FailReload).
func (h *Host) Generation(i int) int {
	w := h.workers[i]
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gen
}

// MemoryBytes returns the linear memory size of worker i's VM.
func (h *Host) MemoryBytes(i int) uint32 {
	w := h.workers[i]
	w.mu.Lock()
	v := w.vm
	w.mu.Unlock()
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.mem.Size()
}

// PollOneoffCalls returns how many times guests called poll_oneoff.
func (h *Host) PollOneoffCalls() int64 { return h.pollCalls.Load() }

// Tick calls proxy_on_tick on every VM whose plugin set a tick period, as the timer would.
func (h *Host) Tick() {
	for _, w := range h.workers {
		w.mu.Lock()
		v := w.vm
		w.mu.Unlock()
		v.mu.Lock()
		if v.tickPeriod > 0 {
			v.tick()
		}
		v.mu.Unlock()
	}
}

// tick runs proxy_on_tick on the root context. mu must be held.
func (v *vm) tick() {
	if v.failed.Load() || v.exp.onTick == nil {
		return
	}
	saved := v.current
	v.current = v.rootID
	_, _ = v.call(v.exp.onTick, "proxy_on_tick", uint64(v.rootID))
	v.runAfter()
	v.current = saved
}

// setTickPeriod (re)starts the VM's ticker. mu must be held.
func (v *vm) setTickPeriod(d time.Duration) {
	v.tickPeriod = d
	if v.tickStop != nil {
		close(v.tickStop)
		v.tickStop = nil
	}
	if d <= 0 || v.host.opts.ManualTicks || v.host.closed.Load() {
		return
	}
	stop := make(chan struct{})
	v.tickStop = stop
	v.host.wg.Add(1)
	go func() {
		defer v.host.wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-v.host.ctx.Done():
				return
			case <-t.C:
				v.mu.Lock()
				select {
				case <-stop:
				default:
					v.tick()
				}
				v.mu.Unlock()
			}
		}
	}()
}

// Close stops tickers and callouts and releases every VM (the Module stays usable).
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		h.closed.Store(true)
		h.cancel()
		for _, w := range h.workers {
			w.mu.Lock()
			v := w.vm
			w.mu.Unlock()
			v.mu.Lock()
			v.shutdown()
			v.closeLocked()
			for _, s := range v.streams {
				if s.resetErr == nil {
					s.resetErr = ErrClosed
				}
				s.signal()
			}
			v.mu.Unlock()
		}
		h.wg.Wait()
	})
	return nil
}

// shutdown calls proxy_on_done and proxy_on_delete on the root context (cpp-host
// startShutdown). mu must be held.
func (v *vm) shutdown() {
	if v.failed.Load() || v.rootID == 0 {
		return
	}
	v.current = v.rootID
	done := uint64(1)
	if v.exp.onDone != nil {
		done, _ = v.call(v.exp.onDone, "proxy_on_done", uint64(v.rootID))
		v.runAfter()
	}
	if uint32(done) != 0 && v.exp.onDelete != nil {
		_, _ = v.call(v.exp.onDelete, "proxy_on_delete", uint64(v.rootID))
		v.runAfter()
	}
}

func (h *Host) now() time.Time { return h.opts.Now() }

func (h *Host) realtimeNanos() uint64 {
	n := h.opts.Now().UnixNano()
	if n < 0 {
		return 0
	}
	return uint64(n)
}

// monotonicNanos is the time since the host started, measured on the injected clock when one
// is set (so tests that move time move the guest's monotonic clock too).
func (h *Host) monotonicNanos() uint64 {
	d := h.opts.Now().Sub(h.start)
	if d < 0 {
		return 0
	}
	return uint64(d)
}
