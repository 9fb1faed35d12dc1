package jsonrpc

import (
	"strconv"

	"github.com/mcpmesh/gateway/shared/jsontext"
)

// JSON-RPC error codes used by the gateway.
const (
	// CodeParseError answers a body that is not JSON.
	CodeParseError = -32700
	// CodeInvalidRequest answers JSON that is not an acceptable JSON-RPC body.
	CodeInvalidRequest = -32600
	// CodeDenied answers a message refused by the route's policy. It lies in the range
	// JSON-RPC reserves for implementation-defined server errors.
	CodeDenied = -32001
)

// Messages of the gateway's error responses.
const (
	MessageParseError     = "Parse error"
	MessageInvalidRequest = "Invalid Request"
	MessageDenied         = "Forbidden: denied by gateway policy"
)

// AppendErrorResponse appends a JSON-RPC error response to dst and returns the extended
// slice:
//
//	{"jsonrpc":"2.0","id":ID,"error":{"code":CODE,"message":MESSAGE,"data":{"request-id":REQUESTID}}}
//
// id is the raw id of the message answered, as in [Message.ID]; it is written as null when
// it is "" or not a JSON string, number or null. data is left out when requestID is "".
func AppendErrorResponse(dst []byte, id string, code int, message, requestID string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	if validID(id) {
		dst = append(dst, id...)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"message":`...)
	dst = jsontext.AppendString(dst, message)
	if requestID != "" {
		dst = append(dst, `,"data":{"request-id":`...)
		dst = jsontext.AppendString(dst, requestID)
		dst = append(dst, '}')
	}
	return append(dst, "}}"...)
}

// ParseErrorBody returns the response to a body that is not JSON (code -32700, id null).
func ParseErrorBody() []byte {
	return AppendErrorResponse(nil, "", CodeParseError, MessageParseError, "")
}

// InvalidRequestBody returns the response to a body that is JSON but not an acceptable
// JSON-RPC body (code -32600), echoing id (see [Error.ID]; "" gives null).
func InvalidRequestBody(id string) []byte {
	return AppendErrorResponse(nil, id, CodeInvalidRequest, MessageInvalidRequest, "")
}

// DeniedBody returns the response to a message refused by policy (code [CodeDenied]) with
// message (MessageDenied when "") and the gateway's request id in data.
func DeniedBody(id, message, requestID string) []byte {
	if message == "" {
		message = MessageDenied
	}
	return AppendErrorResponse(nil, id, CodeDenied, message, requestID)
}

// validID reports whether id is the raw JSON text of a string, a number or null.
func validID(id string) bool {
	if id == "" || !jsontext.ValidString(id) {
		return false
	}
	switch c := id[0]; {
	case c == '"', c == '-', '0' <= c && c <= '9':
		return true
	}
	return id == "null"
}
