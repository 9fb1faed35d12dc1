package jsonrpc

import (
	"testing"

	"github.com/mcpmesh/gateway/shared/golden"
)

// TestGolden_ErrorResponses: the gateway's JSON-RPC error bodies, one file each under
// testdata/golden (the body and a newline).
func TestGolden_ErrorResponses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		body []byte
	}{
		{"denied-string-id.json", DeniedBody(`"call-9"`, "", "req-7f3a")},
		{"denied-number-id-tool-message.json", DeniedBody("7", `Forbidden: the gateway policy does not allow the tool "rm <-rf> & co"`, "req-7f3a")},
		{"denied-null-id-without-request-id.json", DeniedBody("null", "", "")},
		{"denied-invalid-id-as-null.json", DeniedBody(`{"a":1}`, "", "req-\u2028\n")},
		{"parse-error.json", ParseErrorBody()},
		{"invalid-request.json", InvalidRequestBody(`"x"`)},
		{"invalid-request-without-id.json", InvalidRequestBody("")},
		{"append-batch.json", append(AppendErrorResponse(append(AppendErrorResponse([]byte("["), "1", CodeDenied, MessageDenied, "r"), ','), "2", CodeInvalidRequest, MessageInvalidRequest, "r"), ']')},
	} {
		t.Run(tt.name, func(t *testing.T) {
			golden.Check(t, tt.name, append(tt.body, '\n'))
		})
	}
}
