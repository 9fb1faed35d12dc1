package plugintest

import (
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/golden"
)

// goldenPath is the path of a golden reply under this package's testdata, whichever package's
// test runs the case.
func goldenPath(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "golden", name)
}

// Mode is how the proxy hands the request to a filter whose request-headers callback paused.
type Mode struct {
	Name string
	// HeadersStop is Envoy's allow_on_headers_stop_iteration: the body (and trailers) reach
	// the filter while its headers are paused, and check answers arrive only after the whole
	// request (the slowest token service). Without it, Envoy's default, a paused filter
	// receives nothing more until it continues the stream.
	HeadersStop bool
}

// Modes are the modes every case runs in.
var Modes = []Mode{{Name: "EnvoyDefault"}, {Name: "HeadersStopIteration", HeadersStop: true}}

// Runner runs c (its Before requests, then its Request) in mode m on a filter of its own,
// configured with Config, and reports what it observed of c.Request. It fails t for
// anything that keeps it from running the case.
type Runner func(t testing.TB, c Case, m Mode) Result

// Cases returns every case, grouped by the behaviour they cover.
func Cases() []Case {
	var all []Case
	for _, topic := range [][]Case{routeCases(), headerCases(), charsetCases(), bodyCases(), policyCases(), mcp2026Cases(), tokenServiceCases(), bindingCases(), legacySessionCases(), compressedStreamCases(), redTeamSessionCases(), recordCases(), toolListCases(), shadowCases(), pinCases(), toolListGETCases(), toolListSmuggleCases(), redTeamIndexCases()} {
		all = append(all, topic...)
	}
	return all
}

// Scenarios returns the cases that are not attacks.
func Scenarios() []Case { return selectCases(false) }

// RedTeamCases returns the attacks.
func RedTeamCases() []Case { return selectCases(true) }

func selectCases(redTeam bool) []Case {
	var cs []Case
	for _, c := range Cases() {
		if c.RedTeam == redTeam {
			cs = append(cs, c)
		}
	}
	return cs
}

// attacks marks cs as attacks (Case.RedTeam).
func attacks(cs []Case) []Case {
	for i := range cs {
		cs[i].RedTeam = true
	}
	return cs
}

// RunAll runs every case with run, in parallel, each in every Mode (subtests Name/Mode.Name),
// and checks what it observed.
func RunAll(t *testing.T, run Runner, cases []Case) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			for _, m := range Modes {
				t.Run(m.Name, func(t *testing.T) { Check(t, c, run(t, c, m)) })
			}
		})
	}
}

// Check reports every way r falls short of c.Want (and of c.ClientResponse).
func Check(t testing.TB, c Case, r Result) {
	t.Helper()
	w := c.Want
	if r.Stuck {
		t.Fatalf("stream stuck: paused and never continued or answered")
	}
	if r.LateHeaderWrites > 0 {
		t.Errorf("%d request-header changes after the headers went upstream", r.LateHeaderWrites)
	}
	if w.Status == 0 {
		if !r.Forwarded || r.Status != 0 {
			t.Errorf("request not forwarded: status %d body %s", r.Status, r.Body)
		}
	} else if r.Status != w.Status {
		t.Errorf("status = %d (forwarded %v), want %d; body %s", r.Status, r.Forwarded, w.Status, r.Body)
	}
	if w.Golden != "" {
		golden.CheckFile(t, goldenPath(w.Golden), []byte("status: "+strconv.Itoa(r.Status)+"\ncontent-type: "+r.ReplyHeaders["content-type"]+"\n\n"+r.Body+"\n"))
	}
	for _, sub := range w.BodyContains {
		if !strings.Contains(r.Body, sub) {
			t.Errorf("reply body %s\ndoes not contain %s", r.Body, sub)
		}
	}
	for k, v := range w.ReplyHeaders {
		if got := r.ReplyHeaders[k]; got != v {
			t.Errorf("reply header %s = %q, want %q", k, got, v)
		}
	}
	for k, v := range w.Upstream {
		got, ok := r.Upstream[k]
		if v == "" && ok {
			t.Errorf("upstream received %s: %q; it must not", k, got)
		}
		if v != "" && got != v {
			t.Errorf("upstream header %s = %q, want %q", k, got, v)
		}
	}
	logs := strings.Join(r.Logs, "\n")
	for _, sub := range w.LogContains {
		if !strings.Contains(logs, sub) {
			t.Errorf("log does not contain %s; log:\n%s", sub, logs)
		}
	}
	for _, sub := range w.LogNotContains {
		if strings.Contains(logs, sub) {
			t.Errorf("log contains %s; it must not", sub)
		}
	}
	for name, want := range w.CheckHeaders {
		if got, ok := r.CheckHeaders.Get(name); got != want || (want == "") == ok {
			t.Errorf("check call header %s = %q (present %v), want %q; headers %v", name, got, ok, want, r.CheckHeaders)
		}
	}
	for _, name := range w.Counters {
		if r.Counters[name] < 1 {
			t.Errorf("counter %s not incremented; counters %v", name, r.Counters)
		}
	}
	for _, name := range w.CountersUnchanged {
		if r.Counters[name] != 0 {
			t.Errorf("counter %s changed by %d; it must not", name, r.Counters[name])
		}
	}
	for name, want := range w.Properties {
		if got, ok := r.Properties[name]; !ok || got != want {
			t.Errorf("property %s = %q (set %v), want %q; properties %v", name, got, ok, want, r.Properties)
		}
	}
	if w.CheckCalls >= 0 && r.CheckCalls != w.CheckCalls {
		t.Errorf("check calls = %d, want %d", r.CheckCalls, w.CheckCalls)
	}
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
	if w.ClientBodyGolden != "" {
		golden.CheckFile(t, goldenPath(w.ClientBodyGolden), []byte(r.ClientBody))
	}
	if c.ClientBody != nil {
		if problem := c.ClientBody(r.ClientBody); problem != "" {
			t.Errorf("client response body %q: %s", r.ClientBody, problem)
		}
	}
	for name, want := range w.UpstreamCount {
		if n := len(r.UpstreamAll.Values(name)); n != want {
			t.Errorf("upstream received %d values of %s, want %d: %v", n, name, want, r.UpstreamAll)
		}
	}
}
