#!/usr/bin/env bash
# instr.sh: instructions per iteration of one benchmark, counted by valgrind's callgrind — the
# figure BENCHMARKS.md compares before and after an optimisation, as wall clock on a shared
# machine is too noisy for changes of a few percent.
#
#   build/instr.sh TEST_BINARY BENCH_PATTERN [N1 N2]
#   build/instr.sh TEST_BINARY.wasm BENCH_PATTERN [N1 N2]   (a wasip1 test binary, run by
#                                                           wasmtest/cmd/wasirun on wazero)
#
# Runs the benchmark with -test.benchtime N1x and N2x (default 100 and 400) and prints
# (Ir(N2) − Ir(N1)) / (N2 − N1): set-up, compilation and the first request cancel out. The
# binary is a `go test -c` binary (native plugin logic, or wasmtest/filtertest with
# GATEWAY_WASM for whole streams in the wazero host). GOMAXPROCS=1, GOGC=off for the driver
# and for the guest (BENCH_GOGC) and no asynchronous preemption (callgrind aborts on its
# signals) make the count deterministic to about 0.1 %.
set -euo pipefail
# Whole-stream benchmarks compile filter.wasm once, outside valgrind, into a wazero cache.
export GATEWAY_WASM_CACHE="${GATEWAY_WASM_CACHE:-$(mktemp -d)}"
export WASIRUN_CACHE="$GATEWAY_WASM_CACHE" WASI_GOGC=off
bin="$1" pat="$2" n1="${3:-100}" n2="${4:-400}"
run=("$bin")
if [[ "$bin" == *.wasm ]]; then
	root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
	(cd "$root" && go build -o "$GATEWAY_WASM_CACHE/wasirun" ./wasmtest/cmd/wasirun)
	run=("$GATEWAY_WASM_CACHE/wasirun" "$bin")
fi
count() {
	GOMAXPROCS=1 GOGC=off BENCH_GOGC=off GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off \
		valgrind --tool=callgrind --callgrind-out-file=/dev/null "${run[@]}" \
		-test.run '^$' -test.bench "$pat" -test.benchtime "${1}x" 2>&1 >/dev/null |
		sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
"${run[@]}" -test.run '^$' -test.bench "$pat" -test.benchtime 1x >/dev/null
a="$(count "$n1")" b="$(count "$n2")"
echo "$pat $(((b - a) / (n2 - n1)))"
