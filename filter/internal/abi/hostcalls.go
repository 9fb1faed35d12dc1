package abi

// proxyHost is the proxy-wasm host as the rest of the package sees it: one Go method per host
// call the filter makes, with Go types instead of pointers and lengths. The wasip1 build implements it with
// //go:wasmimport functions (imports_wasip1.go); tests implement it natively.
//
// Methods returning bytes return memory the host allocated through proxy_on_memory_allocate;
// the guest owns it.
type proxyHost interface {
	log(level uint32, msg string) Status
	getLogLevel() (uint32, Status)
	setEffectiveContext(contextID uint32) Status

	getBufferBytes(t BufferType, start, maxSize uint32) ([]byte, Status)
	// setBufferBytes replaces size bytes at start (0: the buffer's head) with data.
	setBufferBytes(t BufferType, start, size uint32, data []byte) Status

	getHeaderMapPairs(m MapType) ([]byte, Status)
	getHeaderMapValue(m MapType, key string) (string, Status)
	addHeaderMapValue(m MapType, key, value string) Status
	replaceHeaderMapValue(m MapType, key, value string) Status
	removeHeaderMapValue(m MapType, key string) Status

	continueStream(s StreamType) Status
	closeStream(s StreamType) Status
	sendLocalResponse(status uint32, details string, body, headers []byte, grpcStatus int32) Status
	httpCall(cluster string, headers, body, trailers []byte, timeoutMillis uint32) (uint32, Status)

	defineMetric(t MetricType, name string) (uint32, Status)
	incrementMetric(id uint32, delta int64) Status

	getProperty(path []byte) ([]byte, Status)
	// setProperty stores value under path for the active stream (Envoy: filter state
	// "wasm.<path>", readable back with getProperty and printable in access logs).
	setProperty(path string, value []byte) Status

	// getSharedData reads the value and CAS token stored under key in the VM id's shared data.
	getSharedData(key string) ([]byte, uint32, Status)
	// setSharedData stores value under key if cas is 0 or the current token.
	setSharedData(key string, value []byte, cas uint32) Status
}
