package jsonrpc

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParse checks that Parse never panics, that whatever it accepts Go's encoding/json
// accepts too and reads the same way (method, id, tool, arguments), and that the error
// bodies built from its results are valid JSON. Seeds: testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := Parse(body)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error of type %T", err)
			}
			if out := InvalidRequestBody(e.ID); !json.Valid(out) {
				t.Fatalf("invalid error body %s", out)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("Parse accepted what encoding/json refuses")
		}
		if len(b.Messages) == 0 {
			t.Fatal("no message")
		}
		checkLikeUpstream(t, body, b)
		for _, m := range b.Messages {
			if out := DeniedBody(m.ID, m.Tool, m.Method); !json.Valid(out) {
				t.Fatalf("invalid denied body %s", out)
			}
			if m.Kind == KindRequest && m.ID == "" || m.Kind == KindNotification && m.ID != "" {
				t.Fatalf("kind %v with id %q", m.Kind, m.ID)
			}
			if m.Arguments != "" && !json.Valid([]byte(m.Arguments)) {
				t.Fatalf("arguments %q", m.Arguments)
			}
		}
	})
}
