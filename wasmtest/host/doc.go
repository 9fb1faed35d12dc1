// Package host is a proxy-wasm (ABI 0.2.1) host on wazero that behaves like Envoy's Wasm host,
// proxy-wasm-cpp-host, with Envoy's HTTP filter semantics on top. Tests, the local gateway and
// the benchmarks use it to run the real filter.wasm.
//
// # Use
//
// Compile once, start a Host (a pool of VMs, one per Envoy worker), then run streams:
//
//	m, err := host.Compile(ctx, wasm, &host.CompileOptions{Cache: wazero.NewCompilationCache()})
//	h, err := host.New(ctx, m, host.Options{
//		Workers:      2,
//		PluginConfig: pluginJSON,
//		Clusters:     map[string]host.Cluster{"tokensvc": {URL: "http://127.0.0.1:8081"}},
//	})
//	defer h.Close()
//	s, err := h.NewStream(ctx, host.StreamInfo{SourceAddress: "10.0.0.7:5123"})
//	defer s.Close() // proxy_on_log, proxy_on_done, proxy_on_delete
//	r, err := s.SendRequestHeaders(ctx, host.Headers{{":method", "GET"}, {":path", "/"},
//		{":authority", "mcp.example.com"}, {":scheme", "https"}}, true)
//	if r.Reply != nil { /* the filter answered: r.Reply.Status, Headers, Body */ }
//	// else r.Headers is what goes upstream; then SendResponseHeaders / SendResponseBody.
//
// SendRequest and SendResponse send a whole message at once. Each Send call returns once the
// filter would let Envoy move on: at once when it continues,
// or, when it pauses (for a proxy_http_call), after the callout's response callback resumes
// or answers the stream; a context ending first gives ErrPaused. Host.Handler wraps all of it
// as an http.Handler in front of an upstream handler (e.g. httputil.ReverseProxy), streaming
// bodies both ways and flushing each response chunk of an event stream (or of a body of
// unknown length) so that streams keep flowing.
//
// # Fidelity to cpp-host and Envoy
//
// Start-up: the ABI marker export is required (0_2_1 or 0_2_0; 0_1_0 is refused), every
// import must match a host function by name and by cpp-host's exact signature (the same
// "missing import" / "import type mismatch" errors), "malloc" is preferred over
// proxy_on_memory_allocate, and the plugin starts with _initialize (then main or
// __main_void if exported, _start otherwise), proxy_on_context_create(root, 0),
// proxy_on_vm_start and proxy_on_configure. The root context id is 1, streams count up;
// PLUGIN_CONFIGURATION is readable only during start-up. Host functions are registered with
// wazero's GoModuleFunction; guest memory is re-read after every guest call.
//
// Restricted callbacks: during _initialize/main and inside the allocator only cpp-host's
// allowlists are linked; any other host call traps with "restricted_callback" and fails the
// VM. The lists depend on Options.Compat: CompatCurrent is cpp-host from #533 on (reported as
// Envoy ≥ 1.39), CompatLegacy the #427 generation, whose poll_oneoff answers ENOSYS (fatal for
// Go's scheduler: "poll_oneoff failed") and which links fewer WASI functions.
// Options.TraceSchedulerCalls counts a guest's poll_oneoff and sched_yield calls by the
// exports in progress (Host.SchedulerCalls), to find which callbacks need them.
//
// WASI: wasi_snapshot_preview1 and wasi_unstable are cpp-host's stubs, quirks included:
// fd_write logs (fd 1 info, fd 2 error, one trailing newline dropped), fd_prestat_get is
// EBADF, fd_read ENOSYS, fd_seek/fd_close log and succeed, fd_fdstat_get describes fd 1 and 2
// only, args are empty, the environment is Options.Env (GOGC, GOMEMLIMIT), random_get
// refuses more than 64 KiB, clocks come from Options.Now.
//
// Failure: a trap of any kind (a Go panic, a runtime error, proc_exit, a restricted call, a
// trap in the allocator during a host call) marks the VM failed; the host never calls it
// again (no proxy_on_log/done/delete, callout responses and ticks dropped). Streams then
// follow Envoy's CHECK_FAIL: FailClose answers 503 with details "wasm_fail_stream" and an
// empty body, without the filter seeing it; FailOpen skips the plugin; FailReload fails the
// running stream closed and starts a new VM for the next stream of that worker.
//
// Streams follow Envoy's Wasm filter: a Pause from a headers callback is
// StopAllIterationAndWatermark (cpp-host #143) unless Options.AllowOnHeadersStopIteration,
// so the body reaches the filter only after proxy_continue_stream; a Pause from a body
// callback buffers, and the next callback sees the whole buffered body; past
// Options.BufferLimit the request is answered 413 (response: 500). Once request headers
// have continued (by the callback's result or by proxy_continue_stream) the filter can no
// longer read or change them (BAD_ARGUMENT), and the request.* properties derived from
// them are NOT_FOUND, as in Envoy, until proxy_on_log, where both are readable again.
// proxy_continue_stream, proxy_send_local_response and proxy_close_stream take effect
// after the running callback returns; a local reply also stops iteration whatever the
// callback returns. A local reply made before any response reached the filter goes through
// the filter's own response callbacks (Envoy sends local replies through the filter chain);
// one made while a response is in the filter replaces it directly; one made after response
// headers went downstream resets the stream (ErrStreamReset). The connection manager's
// x-request-id is added when missing. Teardown is proxy_on_log, proxy_on_done,
// proxy_on_delete.
//
// Header maps use lower-case names, return the first value, report Envoy's byte size from
// proxy_get_header_map_size, serialize an unavailable map as empty, and treat malformed
// pairs as an empty map (1 MiB / 1024 pairs limits). Buffers follow Envoy's copyFrom rules.
//
// proxy_http_call is issued on the root context whatever context calls it, with ids 4, 8, ...;
// an unknown cluster, a negative timeout or a missing :method, :path or :authority is
// BAD_ARGUMENT. The response runs proxy_on_http_call_response(root, id, ...) on the VM's
// serialized executor; call response headers (map 6/7) and body (buffer 4) are readable only
// during it. With CallFailureEnvoy (the default) a timeout arrives as Envoy's synthetic 504
// "upstream request timeout" and a refused connection as a 503 "upstream connect error ...",
// both with headers; only a reset after the response started arrives with zero headers and
// proxy_get_status BROKEN_CONNECTION "reset". CallFailureReset reports every failure that
// way. proxy_set_effective_context accepts live context ids only and lasts for the running
// callback; proxy_continue_stream or a local reply without it acts on the root context and
// does nothing (the host logs a debug line saying so).
//
// Shared data (with CAS tokens) is shared by every VM of a Host, as Envoy shares it by
// vm_id; metrics are process-wide by name, with cpp-host's id encoding and Envoy's rules
// (counters only go up, histograms cannot be read). Property values are encoded as Envoy
// does: strings raw, integers 8-byte little-endian, booleans one byte, timestamps int64
// nanoseconds, maps in the pair format. proxy_set_tick_period_milliseconds starts a ticker
// per VM (Options.ManualTicks leaves ticking to Host.Tick).
//
// # Deliberate differences
//
//   - proc_exit stops the guest at once and fails the VM; cpp-host logs and returns into a
//     guest that does not expect to resume.
//   - Shared queues and gRPC calls answer UNIMPLEMENTED; no foreign functions exist
//     (NOT_FOUND). ABI 0.1.0 is not emulated.
//   - The Send methods block while the filter holds a direction instead of letting the caller
//     keep sending for Envoy to buffer; data sent anyway is held and handed to the filter on
//     continue, as Envoy does.
//   - A stream left paused (for example on a VM that failed) stays paused, as in Envoy; the
//     caller's context bounds it instead of Envoy's stream timeouts.
//   - proxy_replace_header_map_value keeps the first occurrence's position (Envoy removes
//     every occurrence and appends).
//   - Metric names carry no "wasmcustom." prefix; the zero Options.LogLevel keeps every line
//     (Envoy's default is info); streams are spread over workers round robin (or to an idle
//     VM first, Options.IdleWorkerFirst), not per connection. Route matching, retries, timeouts and header sanitization of Envoy's
//     connection manager are not emulated; Handler does not carry trailers.
package host
