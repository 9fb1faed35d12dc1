// wasi-node.mjs runs a wasip1 command module (a Go test binary built with
// GOOS=wasip1 GOARCH=wasm go test -c) under Node's node:wasi, that is on V8, the engine Istio's
// Envoy builds use. Usage: node wasi-node.mjs MODULE.wasm [ARGS...]. The module sees the host's
// file system at / and the current directory as PWD (Go's wasip1 port reads it from there),
// GOGC from WASI_GOGC, and the variables whose names start with BENCH_ (a benchmark's settings,
// e.g. BENCH_LOG_INFO), and exits with the module's exit code. Used by build/bench.sh (make bench).
import { readFile } from "node:fs/promises";
import { WASI } from "node:wasi";
import process from "node:process";

const [file, ...args] = process.argv.slice(2);
if (!file) {
	console.error("usage: node wasi-node.mjs MODULE.wasm [ARGS...]");
	process.exit(2);
}
const wasi = new WASI({
	version: "preview1",
	args: [file, ...args],
	env: {
		PWD: process.cwd(),
		...(process.env.WASI_GOGC ? { GOGC: process.env.WASI_GOGC } : {}),
		...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("BENCH_"))),
	},
	preopens: { "/": "/" },
	returnOnExit: true,
});
const module = await WebAssembly.compile(await readFile(file));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
process.exitCode = wasi.start(instance);
