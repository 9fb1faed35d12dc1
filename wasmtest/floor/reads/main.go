//go:build wasip1

//lint:file-ignore U1000 the functions are exported to the host with //go:wasmexport

// Command reads is the floor module that reads what a body-inspecting filter must read — the
// request headers once, the request body at the end of the stream, the response headers once
// — and sets one property, parsing nothing (wasmtest/floor).
package main

import (
	"strconv"

	"github.com/mcpmesh/gateway/wasmtest/floor/internal/guest"
)

// read is the one property: the bytes read of the request, so that the reads cannot be
// optimised away and a test can see they happened.
const read = "floor.request_bytes"

//go:wasmexport proxy_on_context_create
func onContextCreate(contextID, parentID uint32) {}

//go:wasmexport proxy_on_vm_start
func onVMStart(rootID uint32, size int32) bool { return true }

//go:wasmexport proxy_on_configure
func onConfigure(rootID uint32, size int32) bool { return true }

//go:wasmexport proxy_on_request_headers
func onRequestHeaders(contextID uint32, n int32, endOfStream bool) uint32 {
	pairs := guest.HeaderPairs(guest.RequestHeaders)
	if endOfStream {
		guest.SetProperty(read, strconv.Itoa(len(pairs)))
	}
	return guest.Continue
}

//go:wasmexport proxy_on_request_body
func onRequestBody(contextID uint32, size int32, endOfStream bool) uint32 {
	if !endOfStream {
		return guest.Pause // buffer the body until its end
	}
	body := guest.RequestBody(size)
	guest.SetProperty(read, strconv.Itoa(len(body)))
	return guest.Continue
}

//go:wasmexport proxy_on_request_trailers
func onRequestTrailers(contextID uint32, n int32) uint32 { return guest.Continue }

//go:wasmexport proxy_on_response_headers
func onResponseHeaders(contextID uint32, n int32, endOfStream bool) uint32 {
	guest.HeaderPairs(guest.ResponseHeaders)
	return guest.Continue
}

//go:wasmexport proxy_on_response_body
func onResponseBody(contextID uint32, size int32, endOfStream bool) uint32 { return guest.Continue }

//go:wasmexport proxy_on_response_trailers
func onResponseTrailers(contextID uint32, n int32) uint32 { return guest.Continue }

//go:wasmexport proxy_on_log
func onLog(contextID uint32) {}

//go:wasmexport proxy_on_done
func onDone(contextID uint32) bool { return true }

//go:wasmexport proxy_on_delete
func onDelete(contextID uint32) {}

func main() {}
