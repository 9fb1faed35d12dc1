// Package abi is the filter's proxy-wasm ABI 0.2.1 layer for the standard Go toolchain
// (GOOS=wasip1, -buildmode=c-shared), written from the proxy-wasm specification without an SDK.
//
// It owns:
//   - the host imports (module "env", //go:wasmimport) and the guest exports
//     (//go:wasmexport), in the files built only for wasip1;
//   - the allocator behind proxy_on_memory_allocate, whose buffers stay pinned until the host
//     call that requested them returns;
//   - the header-map serialization shared by header, http_call and local-response calls;
//   - the context table (root contexts, stream contexts, pending http_call ids) and the panic
//     boundary: a panicking stream is answered with 500 (fail closed) and the VM stays up;
//   - plugin.RootHost and plugin.StreamHost implemented on top of the host calls.
//
// Everything except the import and export shims is plain Go behind the proxyHost interface, so
// it is tested natively; the shims are tested by running real modules under wazero.
//
// Restrictions the package follows, because Envoy's host enforces or needs them: no host call
// other than proxy_log from init, no goroutines, no sleeping or blocking inside a callback,
// and no fmt or os in per-request code. No timer, wait, runtime.GC or debug.FreeOSMemory
// either (only the abi_gcstress test build collects in the allocator): a callback that yields
// to the Go scheduler lets the runtime start its poller, and from then on every collection
// calls poll_oneoff, which Envoy before proxy-wasm-cpp-host #533 answers with a fatal ENOSYS
// (docs/filter.md, "Which Envoy releases can run the module").
//
// The one yield is deliberate and guarded: at proxy_on_vm_start the VM asks the host once
// whether poll_oneoff works (a zero-timeout clock poll), and only then does proxy_on_delete
// yield to the scheduler once every yieldEvery streams, so that the garbage collector's
// background worker and its CPU limiter's bookkeeping run; without that a collection can stall
// for good and the heap grow without bound (docs/filter.md, "Memory").
package abi
