package jsonrpc

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/golden/name; with -update (go test ./filter/jsonrpc
// -update) it rewrites the file instead.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s:\ngot:\n%s\nwant:\n%s\n(check the change, then rewrite it with go test -update)", t.Name(), path, got, want)
	}
}

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
			golden(t, tt.name, append(tt.body, '\n'))
		})
	}
}
