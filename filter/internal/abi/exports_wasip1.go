//go:build wasip1

//lint:file-ignore U1000 the functions are exported to the host with //go:wasmexport

package abi

import (
	"runtime"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin"
)

// The module's one VM. Exports are package-level functions by nature, so this state is too;
// it is created during _initialize and touched only from exports.
var (
	pins  pinSet
	theVM = newVM(wasmHost{pins: &pins, out: &outParams{}}, time.Now, nil)
	// gcStress makes every allocation run a garbage collection first (build tag abi_gcstress),
	// to prove in tests that host-requested buffers stay pinned.
	gcStress bool
)

// Register installs the constructor of the plugin root, called for every root context the host
// creates. Call it from an init function of package main; it makes no host call.
func Register(newRoot NewRootFunc) { theVM.newRoot = newRoot }

//go:wasmexport proxy_abi_version_0_2_1
func proxyABIVersion021() {}

//go:wasmexport proxy_on_memory_allocate
func proxyOnMemoryAllocate(size uint32) (p *byte) {
	defer func() {
		if recover() != nil {
			p = nil
		}
	}()
	if gcStress {
		runtime.GC()
	}
	return pins.alloc(size)
}

//go:wasmexport proxy_on_context_create
func proxyOnContextCreate(contextID, parentID uint32) { theVM.contextCreate(contextID, parentID) }

//go:wasmexport proxy_on_vm_start
func proxyOnVMStart(rootID uint32, vmConfigSize int32) bool {
	theVM.probeYield(schedulerYield)
	return theVM.vmStart(rootID)
}

//go:wasmexport proxy_on_configure
func proxyOnConfigure(rootID uint32, configSize int32) bool {
	return theVM.configure(rootID, configSize)
}

// proxy_on_tick is part of the ABI; the plugin sets no tick period, so it does nothing.
//
//go:wasmexport proxy_on_tick
func proxyOnTick(rootID uint32) {}

//go:wasmexport proxy_on_request_headers
func proxyOnRequestHeaders(contextID uint32, numHeaders int32, endOfStream bool) plugin.Action {
	return theVM.requestHeaders(contextID, numHeaders, endOfStream)
}

//go:wasmexport proxy_on_request_body
func proxyOnRequestBody(contextID uint32, bodySize int32, endOfStream bool) plugin.Action {
	return theVM.requestBody(contextID, bodySize, endOfStream)
}

//go:wasmexport proxy_on_request_trailers
func proxyOnRequestTrailers(contextID uint32, numTrailers int32) plugin.Action {
	return theVM.requestTrailers(contextID, numTrailers)
}

//go:wasmexport proxy_on_response_headers
func proxyOnResponseHeaders(contextID uint32, numHeaders int32, endOfStream bool) plugin.Action {
	return theVM.responseHeaders(contextID, numHeaders, endOfStream)
}

//go:wasmexport proxy_on_response_body
func proxyOnResponseBody(contextID uint32, bodySize int32, endOfStream bool) plugin.Action {
	return theVM.responseBody(contextID, bodySize, endOfStream)
}

//go:wasmexport proxy_on_response_trailers
func proxyOnResponseTrailers(contextID uint32, numTrailers int32) plugin.Action {
	return theVM.responseTrailers(contextID, numTrailers)
}

//go:wasmexport proxy_on_http_call_response
func proxyOnHTTPCallResponse(rootID, callID uint32, numHeaders, bodySize, numTrailers int32) {
	theVM.httpCallResponse(rootID, callID, numHeaders, bodySize, numTrailers)
}

//go:wasmexport proxy_on_queue_ready
func proxyOnQueueReady(rootID, queueID uint32) {}

//go:wasmexport proxy_on_log
func proxyOnLog(contextID uint32) { theVM.log(contextID) }

//go:wasmexport proxy_on_done
func proxyOnDone(contextID uint32) bool { return theVM.done(contextID) }

//go:wasmexport proxy_on_delete
func proxyOnDelete(contextID uint32) { theVM.delete(contextID) }
