package plugintest

import (
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin"
)

// RedTeamResult is what a runner observed of a RedTeamCase.
type RedTeamResult struct {
	Result
	// UpstreamAll are the request headers as forwarded, every value of each.
	UpstreamAll [][2]string
	// ClientResponse are the response headers the client received for the case's Response
	// (nil when none was sent).
	ClientResponse map[string]string
}

// CheckRedTeam reports every way r falls short of c (see Check), and the header counts.
func CheckRedTeam(t testing.TB, c RedTeamCase, r RedTeamResult) {
	t.Helper()
	Check(t, c.Scenario, r.Result)
	if !r.Forwarded {
		return
	}
	if c.ClientResponse != nil {
		if r.ClientResponse == nil {
			t.Errorf("no response reached the client")
		} else if problem := c.ClientResponse(r.ClientResponse); problem != "" {
			t.Errorf("client response %v: %s", r.ClientResponse, problem)
		}
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
	session := ""
	for _, b := range c.Before {
		r := nf.runCase(RedTeamCase{Scenario: Scenario{Request: b}, Response: c.BeforeResponse}, headersStop)
		if id, ok := r.ClientResponse["mcp-session-id"]; ok {
			session = id
		}
	}
	c.Request = WithSession(c.Request, session)
	return nf.runCase(c, headersStop)
}
