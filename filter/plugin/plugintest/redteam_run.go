package plugintest

import (
	"strconv"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin"
)

// RedTeamResult is what a runner observed of a RedTeamCase.
type RedTeamResult struct {
	Result
	// UpstreamAll are the request headers as forwarded, every value of each.
	UpstreamAll [][2]string
}

// CheckRedTeam reports every way r falls short of c (see Check), and the header counts.
func CheckRedTeam(t testing.TB, c RedTeamCase, r RedTeamResult) {
	t.Helper()
	Check(t, c.Scenario, r.Result)
	if !r.Forwarded {
		return
	}
	for name, want := range c.UpstreamCount {
		n := 0
		for _, h := range r.UpstreamAll {
			if h[0] == name {
				n++
			}
		}
		if n != want {
			t.Errorf("upstream received %d values of %s, want %d: %v", n, name, want, r.UpstreamAll)
		}
	}
}

// NewRedTeamNativeFilter configures a filter with RedTeamConfig.
func NewRedTeamNativeFilter() (*NativeFilter, error) {
	h := NewNativeHost()
	f := plugin.New(h)
	if err := f.Configure(RedTeamConfig()); err != nil {
		return nil, err
	}
	return &NativeFilter{Host: h, Filter: f}, nil
}

// requestTrailersHandler is the optional stream method the ABI layer calls for
// proxy_on_request_trailers; without it the ABI continues the stream.
type requestTrailersHandler interface {
	OnRequestTrailers(numTrailers int) plugin.Action
}

// RunRedTeam runs c's Before requests, then its request, on nf (Envoy's default mode, or
// allow_on_headers_stop_iteration when headersStop is set). Check calls are answered by
// c.Answer or AnswerCheck.
func (nf *NativeFilter) RunRedTeam(c RedTeamCase, headersStop bool) RedTeamResult {
	for _, b := range c.Before {
		nf.runRedTeam(RedTeamCase{Scenario: Scenario{Request: b}}, headersStop)
	}
	return nf.runRedTeam(c, headersStop)
}

func (nf *NativeFilter) runRedTeam(c RedTeamCase, headersStop bool) RedTeamResult {
	req := c.Request
	answer := c.Answer
	if answer == nil {
		answer = AnswerCheck
	}
	logStart := len(nf.Host.Logs)
	s := &nativeStream{NativeHost: nf.Host}
	s.headers = []plugin.Header{{Name: ":method", Value: req.Method}, {Name: ":path", Value: req.Path}, {Name: ":authority", Value: req.Authority}, {Name: ":scheme", Value: "https"}, {Name: "x-request-id", Value: RequestID}}
	size := 0
	for _, ch := range req.Chunks {
		size += len(ch)
	}
	if len(req.Chunks) > 0 && !req.NoContentLength {
		s.headers = append(s.headers, plugin.Header{Name: "content-length", Value: strconv.Itoa(size)})
	}
	for _, h := range req.Headers {
		s.headers = append(s.headers, plugin.Header{Name: h[0], Value: h[1]})
	}
	deliver := func() {
		for len(s.calls) > 0 {
			call := s.calls[0]
			s.calls = s.calls[1:]
			var key string
			for _, h := range call.headers {
				if h.Name == "x-gateway-filter-key" {
					key = h.Value
				}
			}
			a := answer(key, call.body)
			if a.Fail {
				call.cb(plugin.CallResponse{Failed: true})
				continue
			}
			call.cb(plugin.CallResponse{Headers: []plugin.Header{{Name: ":status", Value: strconv.Itoa(a.Status)}}, Body: []byte(a.Body)})
		}
	}
	trailers := len(c.Trailers) > 0
	var early []plugin.Header // the headers as Envoy sent them upstream before the filter decided
	st := nf.Filter.NewStream(s)
	action := st.OnRequestHeaders(len(s.headers), len(req.Chunks) == 0 && !trailers)
	headersHeld := action == plugin.Pause
	s.headersGone = !headersHeld || s.continued
	before := 0
	if !headersStop {
		deliver()
	}
	stuck := func() RedTeamResult {
		st.OnDone()
		return RedTeamResult{Result: Result{Stuck: true, CheckCalls: s.nCalls, Logs: nf.Host.Logs[logStart:]}}
	}
	for i, ch := range req.Chunks {
		if s.reply != nil {
			break
		}
		if headersHeld && !s.continued && !headersStop {
			return stuck()
		}
		s.headersGone = s.headersGone || s.continued
		s.body = append(s.body, ch...)
		before = s.continues
		action = st.OnRequestBody(len(s.body), i == len(req.Chunks)-1 && !trailers)
		if !headersStop {
			deliver()
		}
	}
	if trailers && s.reply == nil {
		if headersHeld && !s.continued && !headersStop {
			return stuck()
		}
		before = s.continues
		action = plugin.Continue // what the ABI layer answers for a stream without the method
		if th, ok := st.(requestTrailersHandler); ok {
			action = th.OnRequestTrailers(len(c.Trailers))
		}
		if action == plugin.Continue && s.reply == nil && !s.continued {
			// Envoy continues the paused headers with the trailers: the request goes
			// upstream as it is now, whatever the filter does later.
			early = append([]plugin.Header(nil), s.headers...)
			s.headersGone = true
		}
	}
	deliver()
	st.OnDone()
	res := RedTeamResult{Result: Result{CheckCalls: s.nCalls, Logs: append([]string(nil), nf.Host.Logs[logStart:]...), LateHeaderWrites: s.lateHeaderWrites}}
	if early != nil {
		res.Forwarded = true
		res.Upstream = map[string]string{}
		for _, h := range early {
			res.Upstream[h.Name] = h.Value
			res.UpstreamAll = append(res.UpstreamAll, [2]string{h.Name, h.Value})
		}
		return res
	}
	if s.reply != nil {
		res.Status, res.Body, res.ReplyHeaders = s.reply.Status, s.reply.Body, s.reply.ReplyHeaders
		return res
	}
	res.Forwarded = action == plugin.Continue || s.continues > before
	res.Upstream = map[string]string{}
	for _, h := range s.headers {
		res.Upstream[h.Name] = h.Value
		res.UpstreamAll = append(res.UpstreamAll, [2]string{h.Name, h.Value})
	}
	return res
}
