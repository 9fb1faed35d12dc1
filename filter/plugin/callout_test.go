package plugin

import (
	"testing"
	"time"
	"unsafe"

	"github.com/mcpmesh/gateway/shared/jsontext"
	"github.com/mcpmesh/gateway/shared/pluginconf"
)

// TestBundleFrom_KeepsNotTheAnswer checks that a bundle's strings are copies, not substrings
// of the check answer: a cached bundle must not keep the whole answer alive.
func TestBundleFrom_KeepsNotTheAnswer(t *testing.T) {
	tests := []struct {
		name, answer string
	}{
		{"identity and assertion", `{"status":"ok","identity":{"sub":"alice","email":"alice@example.com"},"assertion":"a.b.c"}`},
		{"groups, claims, tokens, session key", `{"status":"ok","identity":{"sub":"bob","name":"Bob","client_id":"cli",` +
			`"groups":["eng","ops"],"claims":{"dept":["r&d"],"level":[3],"dept":["sales"]}},"assertion":"x.y.z",` +
			`"upstream_token":"up-tok","client_token":"cl-tok","session_key":"c2Vzc2lvbi1rZXktb2YtYWxpY2Utb24tdGhlLXJvdXRl"}`},
	}
	f := &Filter{cfg: &pluginconf.Config{CacheTTLSeconds: 60}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := f.bundleFrom(jsontext.Parse(tt.answer), time.Unix(1_000_000, 0))
			if err != nil {
				t.Fatal(err)
			}
			strs := []string{b.input.User, b.input.Email, b.input.Name, b.input.ClientID, b.assertion, b.upstreamToken, b.clientToken}
			strs = append(strs, b.input.Groups...)
			for k, vs := range b.input.Claims {
				strs = append(append(strs, k), vs...)
			}
			start := uintptr(unsafe.Pointer(unsafe.StringData(tt.answer)))
			for _, s := range strs {
				if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); s != "" && p >= start && p < start+uintptr(len(tt.answer)) {
					t.Errorf("%q points into the check answer", s)
				}
			}
		})
	}
}

func TestCompactStrings(t *testing.T) {
	tests := [][]string{
		nil,
		{""},
		{"a", "", "bc", "def"},
		{"", ""},
	}
	for _, want := range tests {
		got := append([]string(nil), want...)
		ptrs := make([]*string, len(got))
		for i := range got {
			ptrs[i] = &got[i]
		}
		compactStrings(ptrs)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("compactStrings(%q)[%d] = %q", want, i, got[i])
			}
		}
	}
}
