package jsonrpc

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
)

// FuzzParse checks that Parse never panics, that whatever it accepts Go's encoding/json
// accepts too and reads the same way (method, id, tool, arguments), that ParseOwned reads
// every body as Parse does, and that the error bodies built from its results are valid JSON.
// Seeds: testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := Parse(body)
		var one [1]Message
		ob, oerr := ParseOwned(one[:], slices.Clone(body))
		if !reflect.DeepEqual(ob, b) || !reflect.DeepEqual(oerr, err) {
			t.Fatalf("ParseOwned(%q) = %+v, %v; Parse: %+v, %v", body, ob, oerr, b, err)
		}
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

// FuzzParse_MatchesGJSONReading checks that Parse reads every body exactly as refParse, the
// implementation on gjson it replaced, does: the same messages, or the same error (a body
// both too deep and invalid may be reported either way).
// Seeds: testdata/fuzz/FuzzParse_MatchesGJSONReading.
func FuzzParse_MatchesGJSONReading(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := Parse(body)
		want, wantErr := refParse(body)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("Parse(%q): error %v, reference error %v", body, err, wantErr)
		}
		if err != nil {
			e, w := err.(*Error), wantErr.(*Error)
			if e.Err != w.Err || e.Index != w.Index || e.ID != w.ID || e.Err == ErrInvalidRequest && e.Reason != w.Reason {
				t.Fatalf("Parse(%q): error %+v, reference %+v", body, e, w)
			}
			return
		}
		if got.Array != want.Array || !slices.Equal(got.Messages, want.Messages) {
			t.Fatalf("Parse(%q) = %+v, reference %+v", body, got, want)
		}
	})
}
