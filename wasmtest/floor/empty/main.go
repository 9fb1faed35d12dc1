//go:build wasip1

//lint:file-ignore U1000 the functions are exported to the host with //go:wasmexport

// Command empty is the floor module whose every callback returns at once (Continue, true)
// and makes no host call: what the ABI, the host and the Go runtime's entry into the module
// cost by themselves (wasmtest/floor).
package main

import _ "github.com/mcpmesh/gateway/wasmtest/floor/internal/guest" // the ABI marker and allocator

//go:wasmexport proxy_on_context_create
func onContextCreate(contextID, parentID uint32) {}

//go:wasmexport proxy_on_vm_start
func onVMStart(rootID uint32, size int32) bool { return true }

//go:wasmexport proxy_on_configure
func onConfigure(rootID uint32, size int32) bool { return true }

//go:wasmexport proxy_on_request_headers
func onRequestHeaders(contextID uint32, n int32, endOfStream bool) uint32 { return 0 }

//go:wasmexport proxy_on_request_body
func onRequestBody(contextID uint32, size int32, endOfStream bool) uint32 { return 0 }

//go:wasmexport proxy_on_request_trailers
func onRequestTrailers(contextID uint32, n int32) uint32 { return 0 }

//go:wasmexport proxy_on_response_headers
func onResponseHeaders(contextID uint32, n int32, endOfStream bool) uint32 { return 0 }

//go:wasmexport proxy_on_response_body
func onResponseBody(contextID uint32, size int32, endOfStream bool) uint32 { return 0 }

//go:wasmexport proxy_on_response_trailers
func onResponseTrailers(contextID uint32, n int32) uint32 { return 0 }

//go:wasmexport proxy_on_log
func onLog(contextID uint32) {}

//go:wasmexport proxy_on_done
func onDone(contextID uint32) bool { return true }

//go:wasmexport proxy_on_delete
func onDelete(contextID uint32) {}

func main() {}
