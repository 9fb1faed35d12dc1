// Command gatewaybench measures what the local gateway adds to a request: the same load
// generator (closed-loop clients on keep-alive connections, each sending a tools/call of
// -size bytes and reading the whole answer) runs against a bare httputil.ReverseProxy and
// against the local gateway (the real filter.wasm in the wazero host, the token service
// in-process, a cached token), both in front of the same in-process upstream MCP server. The
// two alternate -rounds times in one process (bare first in even rounds, gateway first in odd
// ones) so that a shared machine's load falls on both; the summary gives the median of each
// figure over the rounds and the gateway's overhead against the bare proxy.
//
//	make wasm && go run ./wasmtest/cmd/gatewaybench -rounds 5 -duration 3s
//	make bench-gateway
//
// -cpuprofile, -blockprofile and -mutexprofile write pprof profiles of the measured rounds
// (the whole process: load generator, upstream and proxies); -mode gateway measures the
// gateway alone, for profiles of it. Figures and their reading are in
// BENCHMARKS.md ("Local gateway overhead").
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/host"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// wasmLogLevels are the values of -wasm-log-level.
var wasmLogLevels = map[string]host.LogLevel{
	"trace": host.LogTrace, "debug": host.LogDebug, "info": host.LogInfo, "warn": host.LogWarn, "error": host.LogError,
}

// settings are the command's flags.
type settings struct {
	wasm                  string
	clients, size, rounds int
	workers               int
	duration, warmup      time.Duration
	logFormat, wasmLevel  string
	mode                  string
	cpuProf, blockProf    string
	mutexProf, memProf    string
	blockRate, mutexFrac  int
	goalP50, goalP99      time.Duration
	goalThroughput        float64
}

func run(args []string, stdout, stderr io.Writer) int {
	var st settings
	fs := flag.NewFlagSet("gatewaybench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&st.wasm, "wasm", envOr("GATEWAY_WASM", "build/out/filter.wasm"), "filter.wasm to run (make wasm builds it)")
	fs.IntVar(&st.clients, "clients", 4, "concurrent clients")
	fs.IntVar(&st.size, "size", 1024, "bytes of the tools/call request body")
	fs.IntVar(&st.rounds, "rounds", 5, "rounds; each runs both alternatives")
	fs.IntVar(&st.workers, "workers", 2, "filter VMs (Envoy worker threads)")
	fs.DurationVar(&st.duration, "duration", 3*time.Second, "load per alternative and round")
	fs.DurationVar(&st.warmup, "warmup", time.Second, "load per alternative before the first round (not measured)")
	fs.StringVar(&st.logFormat, "log-format", "text", "the gateway's log format as in localgateway (text or json, written to io.Discard), or none")
	fs.StringVar(&st.wasmLevel, "wasm-log-level", "info", "proxy log level of the filter: trace, debug, info, warn or error")
	fs.StringVar(&st.mode, "mode", "both", "both (alternate), gateway or bare (one alternative only, e.g. for profiles)")
	fs.StringVar(&st.cpuProf, "cpuprofile", "", "write a CPU profile of the measured rounds to this file")
	fs.StringVar(&st.blockProf, "blockprofile", "", "write a block profile of the measured rounds to this file")
	fs.StringVar(&st.mutexProf, "mutexprofile", "", "write a mutex profile of the measured rounds to this file")
	fs.StringVar(&st.memProf, "memprofile", "", "write an allocation profile to this file (since start-up: focus on the handlers)")
	fs.IntVar(&st.blockRate, "blockprofilerate", 10000, "runtime.SetBlockProfileRate with -blockprofile (ns)")
	fs.IntVar(&st.mutexFrac, "mutexprofilefraction", 10, "runtime.SetMutexProfileFraction with -mutexprofile")
	fs.DurationVar(&st.goalP50, "goal-p50", 150*time.Microsecond, "goal: most the gateway may add to p50")
	fs.DurationVar(&st.goalP99, "goal-p99", 400*time.Microsecond, "goal: most the gateway may add to p99")
	fs.Float64Var(&st.goalThroughput, "goal-throughput", 0.70, "goal: least share of the bare proxy's throughput the gateway keeps")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	level, ok := wasmLogLevels[st.wasmLevel]
	if !ok {
		fmt.Fprintf(stderr, "gatewaybench: -wasm-log-level must be trace, debug, info, warn or error, got %q\n", st.wasmLevel)
		return 2
	}
	if st.mode != "both" && st.mode != "gateway" && st.mode != "bare" {
		fmt.Fprintf(stderr, "gatewaybench: -mode must be both, gateway or bare, got %q\n", st.mode)
		return 2
	}
	if st.clients <= 0 || st.rounds <= 0 || st.size < 100 || st.duration <= 0 {
		fmt.Fprintln(stderr, "gatewaybench: -clients and -rounds must be positive, -size at least 100, -duration positive")
		return 2
	}
	var logger *slog.Logger
	if st.logFormat != "none" {
		var err error
		if logger, err = gateway.NewLogger(st.logFormat, level, io.Discard); err != nil {
			fmt.Fprintf(stderr, "gatewaybench: %v\n", err)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	wasm, err := os.ReadFile(st.wasm)
	if err != nil {
		fmt.Fprintf(stderr, "gatewaybench: read the filter module: %v (build it with make wasm)\n", err)
		return 1
	}
	mod, err := host.Compile(ctx, wasm, nil)
	if err != nil {
		fmt.Fprintf(stderr, "gatewaybench: compile %s: %v\n", st.wasm, err)
		return 1
	}
	s, err := newStack(ctx, stackOptions{module: mod, workers: st.workers, logger: logger, logLevel: level, size: st.size})
	if err != nil {
		fmt.Fprintf(stderr, "gatewaybench: %v\n", err)
		return 1
	}
	defer s.close()
	if err := bench(ctx, st, s, stdout); err != nil {
		fmt.Fprintf(stderr, "gatewaybench: %v\n", err)
		return 1
	}
	return 0
}

// alternative is one of the two things measured.
type alternative struct {
	name string
	url  string
	runs []figures
}

// bench runs the rounds and prints the figures and the summary.
func bench(ctx context.Context, st settings, s *stack, out io.Writer) error {
	l := newLoader(st.clients, s.token, s.body, s.up.result)
	bare := &alternative{name: "bare", url: s.bareURL}
	gw := &alternative{name: "gateway", url: s.gwURL}
	var alts []*alternative
	switch st.mode {
	case "both":
		alts = []*alternative{bare, gw}
	case "bare":
		alts = []*alternative{bare}
	case "gateway":
		alts = []*alternative{gw}
	}
	fmt.Fprintf(out, "gatewaybench: %d clients, %d-byte tools/call, %d rounds of %v per alternative, %d filter VMs, log %s at %s\n",
		st.clients, len(s.body), st.rounds, st.duration, st.workers, st.logFormat, st.wasmLevel)
	fmt.Fprintf(out, "machine: %s, %d CPUs (GOMAXPROCS %d), %s; load average %s\n",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), loadAverage())
	for _, a := range alts {
		if _, err := l.run(ctx, a.url, st.warmup); err != nil {
			return fmt.Errorf("warm-up of %s: %w", a.name, err)
		}
	}
	prof, err := startProfiles(st)
	if err != nil {
		return err
	}
	checksBefore := s.checks.Load()
	fmt.Fprintf(out, "\n%-6s %-8s %9s %9s %9s %10s %9s %10s\n", "round", "alt", "requests", "p50", "p99", "req/s", "cpu/req", "allocs/req")
	upBefore := s.up.requests.Load()
	for r := range st.rounds {
		order := alts
		if r%2 == 1 {
			order = reversed(alts)
		}
		for _, a := range order {
			f, err := l.run(ctx, a.url, st.duration)
			if err != nil {
				_ = prof.stop()
				return fmt.Errorf("round %d, %s: %w", r, a.name, err)
			}
			a.runs = append(a.runs, f)
			fmt.Fprintf(out, "%-6d %-8s %9d %9s %9s %10.0f %9s %10.1f\n", r, a.name, f.Requests, ms(f.P50), ms(f.P99), f.PerSec, us(f.CPU), f.Allocs)
		}
	}
	if err := prof.stop(); err != nil {
		return err
	}
	total := 0
	for _, a := range alts {
		for _, f := range a.runs {
			total += f.Requests
		}
	}
	if got := s.up.requests.Load() - upBefore; got != int64(total) {
		return fmt.Errorf("the upstream answered %d requests, the clients counted %d", got, total)
	}
	fmt.Fprintf(out, "\nmedians over %d rounds (load average now %s; check API calls while measuring: %d):\n",
		st.rounds, loadAverage(), s.checks.Load()-checksBefore)
	med := map[string]figures{}
	for _, a := range alts {
		m := summarize(a.runs)
		med[a.name] = m
		fmt.Fprintf(out, "  %-8s p50 %s  p99 %s  %.0f req/s  cpu/req %s  allocs/req %.1f\n", a.name, ms(m.P50), ms(m.P99), m.PerSec, us(m.CPU), m.Allocs)
	}
	if st.mode != "both" {
		return nil
	}
	b, g := med["bare"], med["gateway"]
	dP50, dP99, ratio := g.P50-b.P50, g.P99-b.P99, g.PerSec/b.PerSec
	fmt.Fprintf(out, "gateway overhead: p50 %+.3f ms, p99 %+.3f ms, throughput %.0f %% of bare, cpu/req %+.1f µs, allocs/req %+.1f\n",
		dP50.Seconds()*1e3, dP99.Seconds()*1e3, ratio*100, float64(g.CPU-b.CPU)/1e3, g.Allocs-b.Allocs)
	fmt.Fprintf(out, "goals: p50 ≤ +%s %s; p99 ≤ +%s %s; throughput ≥ %.0f %% %s\n",
		ms(st.goalP50), met(dP50 <= st.goalP50), ms(st.goalP99), met(dP99 <= st.goalP99),
		st.goalThroughput*100, met(ratio >= st.goalThroughput))
	return nil
}

// summarize gives the median of each figure over runs.
func summarize(runs []figures) figures {
	var p50, p99 []time.Duration
	var rps []float64
	var n []int
	var cpu []time.Duration
	var allocs []float64
	for _, f := range runs {
		p50, p99, rps, n = append(p50, f.P50), append(p99, f.P99), append(rps, f.PerSec), append(n, f.Requests)
		cpu, allocs = append(cpu, f.CPU), append(allocs, f.Allocs)
	}
	return figures{Requests: median(n), P50: median(p50), P99: median(p99), PerSec: median(rps), CPU: median(cpu),
		Allocs: median(allocs)}
}

// reversed returns a in the opposite order.
func reversed(a []*alternative) []*alternative {
	out := make([]*alternative, len(a))
	for i := range a {
		out[len(a)-1-i] = a[i]
	}
	return out
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", d.Seconds()*1e3) }

func us(d time.Duration) string { return fmt.Sprintf("%.1fµs", d.Seconds()*1e6) }

// profiles records CPU, block and mutex profiles of the measured rounds (not the warm-up).
type profiles struct {
	st  settings
	cpu *os.File
}

func startProfiles(st settings) (*profiles, error) {
	p := &profiles{st: st}
	if st.cpuProf != "" {
		f, err := os.Create(st.cpuProf)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		p.cpu = f
	}
	if st.blockProf != "" {
		runtime.SetBlockProfileRate(st.blockRate)
	}
	if st.mutexProf != "" {
		runtime.SetMutexProfileFraction(st.mutexFrac)
	}
	return p, nil
}

// stop ends the profiles and writes them.
func (p *profiles) stop() error {
	var errs []error
	if p.cpu != nil {
		pprof.StopCPUProfile()
		errs = append(errs, p.cpu.Close())
		p.cpu = nil
	}
	for _, w := range []struct{ name, file string }{{"block", p.st.blockProf}, {"mutex", p.st.mutexProf}, {"allocs", p.st.memProf}} {
		if w.file == "" {
			continue
		}
		f, err := os.Create(w.file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, pprof.Lookup(w.name).WriteTo(f, 0), f.Close())
	}
	runtime.SetBlockProfileRate(0)
	runtime.SetMutexProfileFraction(0)
	return errors.Join(errs...)
}

// cpuModel is /proc/cpuinfo's model name ("unknown" elsewhere).
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute figures.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
