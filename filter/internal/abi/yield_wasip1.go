//go:build wasip1

package abi

import (
	"runtime"
	"unsafe"
)

//go:wasmimport wasi_snapshot_preview1 poll_oneoff
func wasiPollOneoff(in, out unsafe.Pointer, nsubscriptions uint32, nevents unsafe.Pointer) uint32

// schedulerYield returns runtime.Gosched when the host's poll_oneoff works, and nil when it
// does not (proxy-wasm-cpp-host before #533 answers ENOSYS, which the Go scheduler treats as
// fatal once its poller exists). It asks the host once, with one relative clock subscription
// of zero nanoseconds — a poll that cannot wait — which is what the runtime itself sends at
// every start-the-world. Call it from a callback (proxy_on_vm_start), never from _initialize
// or the allocator, where the older host forbids the call.
func schedulerYield() func() {
	// A WASI subscription is 48 bytes: userdata (8), the tag (1: 0 is a clock) padded to 8,
	// then the clock: id (4, 1 is monotonic) padded to 8, timeout (8), precision (8),
	// flags (2: 0 is relative). An event is 32 bytes.
	var sub [48]byte
	sub[16] = 1
	var evt [32]byte
	var n uint32
	if wasiPollOneoff(unsafe.Pointer(&sub[0]), unsafe.Pointer(&evt[0]), 1, unsafe.Pointer(&n)) != 0 {
		return nil
	}
	return runtime.Gosched
}
