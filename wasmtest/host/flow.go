package host

import (
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// This file is the filter-chain logic of Envoy's Wasm HTTP filter (Envoy
// source/extensions/common/wasm/context.cc with cpp-host's result conversion and the
// FilterManager's iteration rules), for one filter whose next hop is the caller.

// hooks are the guest callbacks of one direction.
type hooks struct {
	headers, body, trailers        api.Function
	headersName, bodyName, trlName string
}

func (s *Stream) hooks(f *flow) hooks {
	e := &s.vm.exp
	if f == &s.req {
		return hooks{e.onRequestHeaders, e.onRequestBody, e.onRequestTrailers,
			"proxy_on_request_headers", "proxy_on_request_body", "proxy_on_request_trailers"}
	}
	return hooks{e.onResponseHeaders, e.onResponseBody, e.onResponseTrailers,
		"proxy_on_response_headers", "proxy_on_response_body", "proxy_on_response_trailers"}
}

// bypass reports whether direction f goes around the VM: the plugin is skipped (fail open),
// or, for the response, the guest context was never created or the 503 of a failed VM is
// being sent (Envoy's encode* early returns).
func (s *Stream) bypass(f *flow) bool {
	if s.skip {
		return true
	}
	return f == &s.resp && (!s.created || s.failSent)
}

func (s *Stream) decodeHeaders(h Headers, eos bool) { s.headersIn(&s.req, h, eos) }
func (s *Stream) decodeData(b []byte, eos bool)     { s.bodyIn(&s.req, b, eos) }
func (s *Stream) decodeTrailers(t Headers)          { s.trailersIn(&s.req, t) }
func (s *Stream) encodeHeaders(h Headers, eos bool) { s.headersIn(&s.resp, h, eos) }
func (s *Stream) encodeData(b []byte, eos bool)     { s.bodyIn(&s.resp, b, eos) }
func (s *Stream) encodeTrailers(t Headers)          { s.trailersIn(&s.resp, t) }

func (s *Stream) headersIn(f *flow, h Headers, eos bool) {
	f.hdrs, f.hdrsIn, f.hdrsEOS, f.eosIn = h, true, eos, eos
	if s.bypass(f) {
		s.releaseHeaders(f)
		return
	}
	if s.failed() {
		return
	}
	if f == &s.req {
		if err := s.ensureCreated(); err != nil {
			s.failed()
			return
		}
	}
	hk := s.hooks(f)
	if hk.headers == nil {
		s.releaseHeaders(f)
		return
	}
	f.mapAvail = true
	action, err := s.call(hk.headers, hk.headersName, uint64(s.id), uint64(len(h)), b2u(eos))
	if err != nil {
		s.failed()
		return
	}
	switch {
	case action == actionContinue || action == 2: // 2: ContinueAndEndStream
		f.mapAvail = false
		s.releaseHeaders(f)
	case action == actionPause && s.host.opts.AllowOnHeadersStopIteration:
		f.stopHdrs = true
	default: // Pause is StopAllIterationAndWatermark (cpp-host #143), as is anything larger
		f.stopAll = true
	}
}

func (s *Stream) bodyIn(f *flow, b []byte, eos bool) {
	f.eosIn = eos
	if s.bypass(f) {
		s.releaseBody(f, b, eos)
		return
	}
	if f.stopAll {
		f.held = append(f.held, b...)
		f.heldEOS = eos
		s.checkLimit(f)
		return
	}
	s.deliverBody(f, b, eos)
}

// deliverBody gives a chunk to the guest: alone, or appended to what the filter buffers.
func (s *Stream) deliverBody(f *flow, b []byte, eos bool) {
	if f.buffering {
		f.body = append(f.body, b...)
	} else {
		f.body = append([]byte(nil), b...)
	}
	if !s.checkLimit(f) {
		return
	}
	if s.failed() {
		return
	}
	hk := s.hooks(f)
	if hk.body == nil {
		s.continueBody(f, eos)
		return
	}
	f.bodyAvail = true
	action, err := s.call(hk.body, hk.bodyName, uint64(s.id), uint64(len(f.body)), b2u(eos))
	if err != nil {
		s.failed()
		return
	}
	switch action {
	case actionContinue:
		s.continueBody(f, eos)
	case actionPause, 2: // StopIterationAndBuffer, StopIterationAndWatermark
		f.buffering = true
	default: // StopIterationNoBuffer (also the result after a local reply): the data is dropped
		f.body, f.bodyAvail, f.buffering = nil, false, false
	}
}

// continueBody releases the held headers and the buffered body.
func (s *Stream) continueBody(f *flow, eos bool) {
	b := f.body
	f.body, f.bodyAvail, f.buffering, f.stopHdrs = nil, false, false, false
	f.mapAvail = false
	s.releaseOwnedBody(f, b, eos)
}

func (s *Stream) trailersIn(f *flow, t Headers) {
	f.trl, f.trlIn, f.eosIn = t, true, true
	if s.bypass(f) {
		s.passAll(f)
		return
	}
	if f.stopAll {
		f.heldTrl = true
		return
	}
	s.deliverTrailers(f)
}

func (s *Stream) deliverTrailers(f *flow) {
	if s.failed() {
		return
	}
	hk := s.hooks(f)
	if hk.trailers == nil {
		s.releaseAll(f)
		return
	}
	f.trlAvail = true
	action, err := s.call(hk.trailers, hk.trlName, uint64(s.id), uint64(len(f.trl)))
	if err != nil {
		s.failed()
		return
	}
	if action == actionContinue {
		s.releaseAll(f)
		return
	}
	f.stopTrl = true
}

// releaseAll lets through everything the filter holds in f after its trailers continued.
func (s *Stream) releaseAll(f *flow) {
	b := f.body
	f.body, f.bodyAvail, f.buffering, f.stopHdrs, f.stopTrl = nil, false, false, false, false
	f.mapAvail, f.trlAvail = false, false
	if len(b) > 0 {
		s.releaseOwnedBody(f, b, false)
	}
	s.releaseTrailers(f)
}

// continueRequest and continueResponse are proxy_continue_stream, run after the callback
// that called it returned (Envoy defers continueDecoding/continueEncoding).
func (s *Stream) continueRequest()  { s.resume(&s.req) }
func (s *Stream) continueResponse() { s.resume(&s.resp) }

func (s *Stream) resume(f *flow) {
	if s.ended || s.resetErr != nil || f.done || s.skip || (f == &s.req && s.replied) {
		return
	}
	defer s.signal()
	if f.stopAll {
		// StopAll: the headers go on, then the data Envoy held goes through this filter.
		f.stopAll, f.mapAvail = false, false
		s.releaseHeaders(f)
		if f.done {
			return
		}
		if len(f.held) > 0 || (f.heldEOS && !f.heldTrl) {
			b := f.held
			f.held = nil
			s.deliverBody(f, b, f.heldEOS && !f.heldTrl)
		}
		if f.heldTrl && !f.done && !f.buffering && !s.replied && s.resetErr == nil {
			f.heldTrl = false
			s.deliverTrailers(f)
		}
		return
	}
	if !f.stopHdrs && !f.buffering && !f.stopTrl {
		return // nothing is paused; Envoy ignores the call
	}
	b := f.body
	f.body, f.bodyAvail, f.buffering, f.stopHdrs, f.stopTrl = nil, false, false, false, false
	f.mapAvail, f.trlAvail = false, false
	s.releaseHeaders(f)
	if len(b) > 0 || (f.eosIn && !f.trlIn && !f.hdrsEOS) {
		s.releaseOwnedBody(f, b, f.eosIn && !f.trlIn)
	}
	if f.trlIn {
		f.heldTrl = false
		s.releaseTrailers(f)
	}
}

// sendLocalReply is proxy_send_local_response (or a failure reply), run after the callback.
// Before any response reached the filter, the reply goes through the filter's own response
// callbacks like any response (Envoy sends local replies through the filter chain); if a
// response is in the filter but its headers are not downstream yet, the reply replaces it
// directly; after that, the stream can only be reset.
func (s *Stream) sendLocalReply(r LocalReply, failure bool) {
	if s.ended || s.resetErr != nil {
		return
	}
	defer s.signal()
	f := &s.resp
	if s.replied {
		if s.reply == nil && !f.hdrsOut {
			s.directReply(r)
		}
		return
	}
	s.replied = true
	s.req.mapAvail, s.req.trlAvail = false, false
	s.req.stopAll, s.req.stopHdrs, s.req.buffering, s.req.stopTrl = false, false, false, false
	switch {
	case !f.hdrsIn:
		s.replyBase = r
		if failure || s.bypass(f) {
			s.directReply(r)
			return
		}
		s.encodeHeaders(replyHeaders(r), len(r.Body) == 0)
		if len(r.Body) > 0 && s.reply == nil && s.resetErr == nil && !f.done {
			s.encodeData(r.Body, true)
		}
	case !f.hdrsOut:
		s.directReply(r)
	default:
		s.resetStream("local reply after the response headers were sent downstream")
	}
}

// directReply completes a reply without the filter seeing it.
func (s *Stream) directReply(r LocalReply) {
	h := replyHeaders(r)
	s.reply = &LocalReply{Status: r.Status, Headers: h[1:], Body: r.Body, Details: r.Details, GRPCStatus: r.GRPCStatus}
	f := &s.resp
	f.done, f.stopAll, f.stopHdrs, f.buffering, f.stopTrl = true, false, false, false, false
	f.mapAvail, f.trlAvail, f.bodyAvail = false, false, false
	f.out = Result{}
}

// completeReply turns what the filter released of the reply into the LocalReply.
func (s *Stream) completeReply() {
	f := &s.resp
	r := &LocalReply{Status: s.replyBase.Status, Details: s.replyBase.Details, GRPCStatus: s.replyBase.GRPCStatus, Body: f.out.Body}
	for _, h := range f.out.Headers {
		if h.Name == ":status" {
			if n, err := parseStatus(h.Value); err == nil {
				r.Status = n
			}
			continue
		}
		r.Headers = append(r.Headers, h)
	}
	f.out = Result{}
	s.reply = r
}

func parseStatus(v string) (int, error) {
	n := 0
	if len(v) == 0 || len(v) > 3 {
		return 0, fmt.Errorf("bad :status %q", v)
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad :status %q", v)
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

// resetStream ends the stream abruptly (proxy_close_stream, or a late local reply).
func (s *Stream) resetStream(details string) {
	if s.resetErr != nil || s.ended {
		return
	}
	s.resetErr = fmt.Errorf("%w (%s)", ErrStreamReset, details)
	s.signal()
}

// Close ends the stream as Envoy does when it is destroyed: proxy_on_log (with the final
// headers readable), proxy_on_done and proxy_on_delete, unless the VM failed. It is safe to
// call more than once.
func (s *Stream) Close() error {
	v := s.vm
	v.mu.Lock()
	defer v.mu.Unlock()
	if s.ended {
		return nil
	}
	s.ended = true
	defer s.signal()
	defer delete(v.streams, s.id)
	if !s.created || s.skip || v.failed.Load() || v.closed {
		return nil
	}
	if v.exp.onLog != nil {
		s.logPhase = true
		_, err := s.call(v.exp.onLog, "proxy_on_log", uint64(s.id))
		s.logPhase = false
		if err != nil {
			return err
		}
	}
	if v.exp.onDone != nil {
		if _, err := s.call(v.exp.onDone, "proxy_on_done", uint64(s.id)); err != nil {
			return err
		}
	}
	if v.exp.onDelete != nil {
		if _, err := s.call(v.exp.onDelete, "proxy_on_delete", uint64(s.id)); err != nil {
			return err
		}
	}
	v.runAfter()
	return nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
