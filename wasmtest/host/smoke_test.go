package host

import (
	"context"
	"testing"
	"time"
)

func TestSmoke(t *testing.T) {
	h := newHost(t, Options{PluginConfig: []byte("cfg")})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := h.NewStream(ctx, StreamInfo{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.SendRequestHeaders(ctx, Headers{{":method", "GET"}, {":path", "/x"}, {":authority", "a"}, {":scheme", "http"}}, true)
	t.Logf("%+v %v", r, err)
	r, err = s.SendResponseHeaders(ctx, Headers{{":status", "200"}}, false)
	t.Logf("%+v %v", r, err)
	r, err = s.SendResponseBody(ctx, []byte("hello"), true)
	t.Logf("%+v %v", r, err)
	s.Close()
	for _, l := range h.Logs() {
		t.Logf("%v %s", l.Level, l.Message)
	}
}
