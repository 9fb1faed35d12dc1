#!/usr/bin/env bash
# bench.sh: the filter's benchmarks on the three engines BENCHMARKS.md compares (make bench).
#
#   native  go test -bench in filter/plugin and filter/jsonrpc
#   V8      the same benchmarks compiled for wasip1 (go test -c) run by Node 22's node:wasi
#           (build/wasi-node.mjs; Node 22 from wasmtest/e2e/node/install.sh)
#   wazero  the same wasip1 test binaries run by wasmtest/cmd/wasirun (wazero's compiler)
#   host    whole streams through filter.wasm in wasmtest/host (wasmtest/filtertest)
#
# Raw `go test` output goes to build/out/bench/*.txt; the summary table (the fastest of COUNT
# runs, ns/op: V8 tiers code up while the first runs go, and other work on a shared machine
# only ever slows a run down) is printed last and written to build/out/bench/summary.md.
# Environment: GATEWAY_WASM (the module, required), BENCHTIME (default 1s), COUNT (default 3),
# BENCH (a -bench pattern for the plugin and host benchmarks, default all of them), BENCH_OUT
# (the directory of the raw output, default build/out/bench; not OUT, which the Makefile sets
# and exports), SUMMARY_ONLY=1 (only summarise the raw output already in BENCH_OUT).
# The host benchmarks also read BENCH_LOG_INFO, BENCH_GOGC and BENCH_COLD (=1: the CPU caches
# evicted before each stream, as a proxy's other work between a stream's callbacks evicts
# them; wasmtest/filtertest/cold_test.go): `BENCH_COLD=1 make bench` puts cold figures in the
# host column, which the other engines' benchmarks ignore.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
: "${GATEWAY_WASM:?set GATEWAY_WASM to filter.wasm (make bench does)}"
GO="${GO:-go}"
BENCHTIME="${BENCHTIME:-1s}"
COUNT="${COUNT:-3}"
BENCH="${BENCH:-.}"
out="$(realpath -m "${BENCH_OUT:-$root/build/out/bench}")"
mkdir -p "$out"
if [[ -z "${SUMMARY_ONLY:-}" ]]; then
	node="$(bash wasmtest/e2e/node/install.sh 2>/dev/null | tail -n1)"
	GOOS= GOARCH= "$GO" build -o "$out/wasirun" ./wasmtest/cmd/wasirun

	{
		echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "machine: $(uname -m), $(nproc) CPU, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
		echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "go: $("$GO" version | cut -d' ' -f3), node: $("$node" --version), module: $(stat -c %s "$GATEWAY_WASM") bytes"
	} | tee "$out/machine.txt"

	args=(-test.run '^$' -test.benchtime "$BENCHTIME" -test.count "$COUNT" -test.benchmem)
	for pkg in plugin jsonrpc; do
		dir="filter/$pkg"
		case $pkg in
		plugin) pat="Benchmark(Request|ToolList)_Native/($BENCH)" ;;
		jsonrpc) pat='BenchmarkParse|BenchmarkValidate' ;;
		esac
		echo "== $dir: native" >&2
		(cd "$dir" && "$GO" test -c -o "$out/$pkg.test" . && "$out/$pkg.test" "${args[@]}" -test.bench "$pat") | tee "$out/$pkg-native.txt" >&2
		(cd "$dir" && GOOS=wasip1 GOARCH=wasm "$GO" test -c -o "$out/$pkg.test.wasm" .)
		echo "== $dir: V8 (node:wasi)" >&2
		(cd "$dir" && "$node" --no-warnings "$root/build/wasi-node.mjs" "$out/$pkg.test.wasm" "${args[@]}" -test.bench "$pat") | tee "$out/$pkg-v8.txt" >&2
		echo "== $dir: wazero" >&2
		(cd "$dir" && "$out/wasirun" "$out/$pkg.test.wasm" "${args[@]}" -test.bench "$pat") | tee "$out/$pkg-wazero.txt" >&2
	done
	echo "== wasmtest/filtertest: whole streams in the wazero host" >&2
	(cd wasmtest/filtertest && "$GO" test -c -o "$out/filtertest.test" . &&
		GATEWAY_WASM="$GATEWAY_WASM" "$out/filtertest.test" "${args[@]}" -test.bench "Benchmark(Request|ToolList)_Wasm/($BENCH)") |
		tee "$out/host.txt" >&2
fi

# summary: the fastest ns/op of each benchmark per engine, one row per benchmark name with the
# engine prefix removed (BenchmarkRequest_Native/X and BenchmarkRequest_Wasm/X are row X).
awk '
function fastest(s,   n, a, i, m) {
	n = split(s, a, " ")
	if (n == 0) return ""
	m = a[1]
	for (i = 2; i <= n; i++) if (a[i] + 0 < m + 0) m = a[i]
	return m
}
function fmt(ns) { return ns == "" ? "" : (ns >= 1e6 ? sprintf("%.2f ms", ns / 1e6) : sprintf("%.2f µs", ns / 1e3)) }
FNR == 1 { split(FILENAME, p, "/"); f = p[length(p)]; sub(/\.txt$/, "", f); eng = f; sub(/^[a-z]+-/, "", eng); if (f == "host") eng = "host" }
/^Benchmark/ && $4 == "ns/op" {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark(Request|ToolList)_(Native|Wasm)\//, "", name)
	if (!(name in seen)) { seen[name] = 1; order[++n] = name }
	v[name, eng] = v[name, eng] " " $3
}
END {
	print "| benchmark | native | V8 (node:wasi) | wazero | wazero host, whole stream |"
	print "|---|---:|---:|---:|---:|"
	for (i = 1; i <= n; i++) {
		k = order[i]
		printf "| %s | %s | %s | %s | %s |\n", k, fmt(fastest(v[k, "native"])), fmt(fastest(v[k, "v8"])), fmt(fastest(v[k, "wazero"])), fmt(fastest(v[k, "host"]))
	}
}' "$out"/plugin-native.txt "$out"/plugin-v8.txt "$out"/plugin-wazero.txt "$out"/host.txt \
	"$out"/jsonrpc-native.txt "$out"/jsonrpc-v8.txt "$out"/jsonrpc-wazero.txt | tee "$out/summary.md"
if [[ -z "${SUMMARY_ONLY:-}" ]]; then
	echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"
fi
