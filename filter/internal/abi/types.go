package abi

import "strconv"

// Status is a proxy-wasm result code (proxy_status_t). A non-OK Status is an error, so callers
// can branch with errors.Is(err, StatusNotFound).
type Status uint32

// Status values of ABI 0.2.1.
const (
	StatusOK                   Status = 0
	StatusNotFound             Status = 1
	StatusBadArgument          Status = 2
	StatusSerializationFailure Status = 3
	StatusParseFailure         Status = 4
	StatusInvalidMemoryAccess  Status = 6
	StatusEmpty                Status = 7
	StatusCASMismatch          Status = 8
	StatusInternalFailure      Status = 10
	StatusUnimplemented        Status = 12
)

var statusNames = map[Status]string{
	StatusOK:                   "OK",
	StatusNotFound:             "NOT_FOUND",
	StatusBadArgument:          "BAD_ARGUMENT",
	StatusSerializationFailure: "SERIALIZATION_FAILURE",
	StatusParseFailure:         "PARSE_FAILURE",
	StatusInvalidMemoryAccess:  "INVALID_MEMORY_ACCESS",
	StatusEmpty:                "EMPTY",
	StatusCASMismatch:          "CAS_MISMATCH",
	StatusInternalFailure:      "INTERNAL_FAILURE",
	StatusUnimplemented:        "UNIMPLEMENTED",
}

// String returns the ABI name of s, or its number when it has none.
func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return "status " + strconv.FormatUint(uint64(s), 10)
}

// Error implements error.
func (s Status) Error() string { return "proxy-wasm status " + s.String() }

// err returns nil for StatusOK and s otherwise.
func (s Status) err() error {
	if s == StatusOK {
		return nil
	}
	return s
}

// BufferType names a host buffer for proxy_get_buffer_bytes and friends.
type BufferType uint32

// Buffer types of ABI 0.2.1.
const (
	BufferHTTPRequestBody      BufferType = 0
	BufferHTTPResponseBody     BufferType = 1
	BufferDownstreamData       BufferType = 2
	BufferUpstreamData         BufferType = 3
	BufferHTTPCallResponseBody BufferType = 4
	BufferGRPCCallMessage      BufferType = 5
	BufferVMConfiguration      BufferType = 6
	BufferPluginConfiguration  BufferType = 7
)

// MapType names a host header map.
type MapType uint32

// Map types of ABI 0.2.1.
const (
	MapHTTPRequestHeaders       MapType = 0
	MapHTTPRequestTrailers      MapType = 1
	MapHTTPResponseHeaders      MapType = 2
	MapHTTPResponseTrailers     MapType = 3
	MapHTTPCallResponseHeaders  MapType = 6
	MapHTTPCallResponseTrailers MapType = 7
)

// StreamType names a stream direction for proxy_continue_stream and proxy_close_stream.
type StreamType uint32

// Stream types of ABI 0.2.1.
const (
	StreamHTTPRequest  StreamType = 0
	StreamHTTPResponse StreamType = 1
)

// MetricType is the kind of a metric defined with proxy_define_metric.
type MetricType uint32

// Metric types of ABI 0.2.1.
const (
	MetricCounter   MetricType = 0
	MetricGauge     MetricType = 1
	MetricHistogram MetricType = 2
)

// grpcStatusNone is the gRPC status passed to proxy_send_local_response for plain HTTP.
const grpcStatusNone int32 = -1
