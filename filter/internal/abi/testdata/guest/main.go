//go:build wasip1

// Command guest is a test module for package abi: a small plugin that drives every host call
// the ABI layer wraps, so the real import and export shims can be checked under wazero. It is
// built by module_test.go; nothing ships it.
package main

import (
	"errors"
	"strconv"

	"github.com/mcpmesh/gateway/filter/internal/abi"
	"github.com/mcpmesh/gateway/filter/plugin"
)

func init() {
	abi.Register(func(h plugin.RootHost) abi.Root { return &root{h: h} })
}

func main() {}

type root struct {
	h       plugin.RootHost
	counter uint32
}

func (r *root) Configure(config []byte) error {
	if string(config) != "guest-config" {
		return errors.New("unexpected configuration " + strconv.Quote(string(config)))
	}
	id, err := r.h.DefineCounter("guest_requests_total")
	if err != nil {
		return err
	}
	r.counter = id
	r.h.Log(plugin.LogInfo, "configured")
	return nil
}

func (r *root) NewStream(h plugin.StreamHost) plugin.Stream { return &stream{r: r, h: h} }

type stream struct {
	r    *root
	h    plugin.StreamHost
	path string
}

func (s *stream) OnRequestHeaders(n int, _ bool) plugin.Action {
	s.r.h.IncrementCounter(s.r.counter, 1)
	s.path, _ = s.h.RequestHeader(":path")
	switch s.path {
	case "/headers":
		hs := s.h.RequestHeaders()
		if len(hs) != n {
			s.h.SendLocalResponse(500, nil, []byte("count mismatch"))
			return plugin.Pause
		}
		echo, _ := s.h.RequestHeader("x-echo")
		s.h.SetRequestHeader("x-echo-out", echo+"!")
		s.h.SetRequestHeader("x-seen", strconv.Itoa(len(hs)))
		s.h.RemoveRequestHeader("x-remove")
		if id, ok := s.h.Property("request", "id"); ok {
			s.h.SetRequestHeader("x-request-id-prop", string(id))
		}
		return plugin.Continue
	case "/call":
		err := s.h.DispatchHTTPCall("authz", []plugin.Header{
			{Name: ":method", Value: "POST"}, {Name: ":path", Value: "/check"}, {Name: ":authority", Value: "authz"},
		}, []byte("ping"), 500, s.onCall)
		if err != nil {
			s.h.SendLocalResponse(502, nil, []byte(err.Error()))
		}
		return plugin.Pause
	case "/panic":
		panic("guest panic on purpose")
	}
	return plugin.Continue
}

func (s *stream) onCall(r plugin.CallResponse) {
	if r.Failed {
		s.h.SendLocalResponse(503, []plugin.Header{{Name: "x-reason", Value: "callout failed"}}, nil)
		return
	}
	status := ""
	for _, h := range r.Headers {
		if h.Name == ":status" {
			status = h.Value
		}
	}
	s.h.SetRequestHeader("x-call-status", status)
	s.h.SetRequestHeader("x-call-body", string(r.Body))
	s.h.ContinueRequest()
}

func (s *stream) OnRequestBody(size int, eos bool) plugin.Action {
	if s.path != "/body" {
		return plugin.Continue
	}
	if !eos {
		return plugin.Pause
	}
	body := s.h.RequestBody(size)
	s.h.SendLocalResponse(200, []plugin.Header{{Name: "x-len", Value: strconv.Itoa(len(body))}}, body)
	return plugin.Pause
}

func (s *stream) OnRequestTrailers(int) plugin.Action { return plugin.Continue }

func (s *stream) OnResponseHeaders(int, bool) plugin.Action {
	s.h.SetResponseHeader("x-guest", "1")
	return plugin.Continue
}

func (s *stream) OnResponseBody(int, bool) plugin.Action { return plugin.Continue }
func (s *stream) OnResponseTrailers(int) plugin.Action   { return plugin.Continue }

func (s *stream) OnDone() { s.h.Log(plugin.LogDebug, "done "+s.path) }
