package filtertest

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/wasmtest/host"
)

// CheckServer answers check calls with a case's Answer (or AnswerCheck), optionally late.
type CheckServer struct {
	// Calls counts the check calls.
	Calls atomic.Int64
	// last holds the headers of the last check call.
	last   atomic.Pointer[http.Header]
	answer atomic.Pointer[func(string, []byte) plugintest.CheckAnswer]
	delay  atomic.Int64 // nanoseconds
}

func (c *CheckServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.Calls.Add(1)
	hdr := r.Header.Clone()
	c.last.Store(&hdr)
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	answer := plugintest.AnswerCheck
	if f := c.answer.Load(); f != nil {
		answer = *f
	}
	a := answer(r.Header.Get("X-Gateway-Filter-Key"), body)
	if d := time.Duration(c.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	if a.Fail {
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.Status)
	_, _ = io.WriteString(w, a.Body)
}

// Wasm returns the Runner of filter.wasm (module m): each case on a host of its own, the
// Mode set with host.Options.AllowOnHeadersStopIteration, check calls answered by a
// CheckServer.
func Wasm(m *host.Module) plugintest.Runner { return wasmOn(m, host.CompatCurrent) }

// WasmLegacyEnvoy is Wasm on the proxy-wasm host of Envoy before cpp-host #533
// (host.CompatLegacy), whose poll_oneoff answers ENOSYS: besides the case's own checks, the
// Go scheduler must not have called poll_oneoff or sched_yield (the filter's own start probe,
// host.StartProbe, aside) (docs/filter.md, "Which Envoy
// releases can run the module").
func WasmLegacyEnvoy(m *host.Module) plugintest.Runner { return wasmOn(m, host.CompatLegacy) }

func wasmOn(m *host.Module, compat host.Compat) plugintest.Runner {
	return func(t testing.TB, c plugintest.Case, mode plugintest.Mode) plugintest.Result {
		t.Helper()
		ctx := context.Background()
		check := &CheckServer{}
		h, err := NewHost(ctx, m, check, func(o *host.Options) {
			o.AllowOnHeadersStopIteration = mode.HeadersStop
			o.Compat = compat
			o.TraceSchedulerCalls = compat == host.CompatLegacy
		})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		if compat == host.CompatLegacy {
			defer func() {
				if calls := host.WithoutStartProbe(h.SchedulerCalls(), h.Workers()); len(calls) != 0 {
					t.Errorf("the Go scheduler called the host:\n%s", host.FormatSchedulerCalls(calls))
				}
			}()
		}
		session := ""
		for _, b := range c.Before {
			r, err := send(ctx, h, check, plugintest.Case{Request: b, Response: c.BeforeResponse, ResponseBody: c.BeforeResponseBody})
			if err != nil {
				t.Fatal(err)
			}
			if id, ok := plugintest.ClientSession(r); ok {
				session = id
			}
		}
		if c.Answer != nil {
			check.answer.Store(&c.Answer)
		}
		c.Request = plugintest.WithSession(c.Request, session)
		r, err := send(ctx, h, check, c)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// Run sends one request through h, as Envoy's connection manager would, and reports what the
// client, the upstream and the log saw.
func Run(ctx context.Context, h *host.Host, check *CheckServer, req plugintest.Request) (plugintest.Result, error) {
	return send(ctx, h, check, plugintest.Case{Request: req})
}

// send sends c.Request through h with c's trailers; when the request is forwarded and
// c.Response is set, the upstream then answers with those response headers, and the result
// holds those the client receives. Check calls are answered as check is set to.
func send(ctx context.Context, h *host.Host, check *CheckServer, c plugintest.Case) (res plugintest.Result, err error) {
	return sendOn(ctx, h, check, c, host.StreamInfo{})
}

// sendOn is send on a stream described by info (its worker, for example): drive, and what
// the request changed beside the stream — counters, filter state, guest logs, check calls.
func sendOn(ctx context.Context, h *host.Host, check *CheckServer, c plugintest.Case, info host.StreamInfo) (res plugintest.Result, err error) {
	callsBefore := check.Calls.Load()
	check.last.Store(nil)
	logsBefore := len(h.GuestLogs(host.LogTrace))
	st, err := h.NewStream(ctx, info)
	if err != nil {
		return plugintest.Result{}, err
	}
	defer st.Close()
	counters := map[string]int64{}
	for _, m := range h.Metrics() {
		counters[m.Name] = m.Value
	}
	// The counters the request changed and the properties it set, however it ended.
	defer func() {
		res.Counters = map[string]int64{}
		for _, m := range h.Metrics() {
			if d := m.Value - counters[m.Name]; d != 0 {
				res.Counters[m.Name] = d
			}
		}
		res.Properties = map[string]string{}
		for k, v := range st.FilterStates() {
			res.Properties[strings.TrimPrefix(k, host.FilterStatePrefix)] = string(v)
		}
	}()
	x, err := drive(ctx, st, c)
	res.Stuck = x.stuck
	res.CheckCalls = int(check.Calls.Load() - callsBefore)
	if hp := check.last.Load(); hp != nil {
		res.CheckHeaders = plugintest.Headers{}
		for name, vs := range *hp {
			for _, v := range vs {
				res.CheckHeaders = append(res.CheckHeaders, [2]string{strings.ToLower(name), v})
			}
		}
	}
	if x.reply != nil {
		res.Status, res.Body = x.reply.Status, string(x.reply.Body)
		res.ReplyHeaders = map[string]string{}
		for _, h := range x.reply.Headers {
			res.ReplyHeaders[h.Name] = h.Value
		}
	}
	// What the filter logged, the handling of the response (a refused tool list) included.
	res.Logs = h.GuestLogs(host.LogTrace)[logsBefore:]
	if res.Status != 0 || res.Stuck {
		return res, nil
	}
	res.Forwarded = x.forwarded
	res.Upstream = map[string]string{}
	for _, h := range x.upstream {
		res.Upstream[h.Name] = h.Value
		res.UpstreamAll = append(res.UpstreamAll, [2]string{h.Name, h.Value})
	}
	if err != nil {
		return res, err
	}
	if x.client != nil {
		res.ClientResponse = plugintest.Headers{}
		for _, h := range x.client {
			res.ClientResponse = append(res.ClientResponse, [2]string{h.Name, h.Value})
		}
		res.ClientBody = string(x.clientBody)
	}
	return res, nil
}

// exchange is what one stream did, as drive saw it.
type exchange struct {
	reply      *host.LocalReply // the filter's local reply to the request, if it answered it
	stuck      bool             // the request was neither answered nor released in time
	forwarded  bool             // the headers and the end of the request reached the upstream
	upstream   host.Headers     // the request headers the upstream received
	client     host.Headers     // the response headers the client received (c.Response set)
	clientBody []byte           // the response body the client received
}

// drive sends c.Request on st as Envoy's connection manager would — headers, body chunks,
// trailers — and, when the filter forwards it and c.Response is set, the upstream's answer
// (c.Response, c.ResponseBody, c.ResponseTrailers) back through it. It is the stream alone:
// the benchmarks run it bare, sendOn adds what the request changed beside the stream.
func drive(ctx context.Context, st *host.Stream, c plugintest.Case) (x exchange, err error) {
	req, trailers, response := c.Request, c.Trailers, c.Response
	hdrs := host.Headers{{Name: ":method", Value: req.Method}, {Name: ":path", Value: req.Path}, {Name: ":authority", Value: req.Authority}, {Name: ":scheme", Value: "https"}, {Name: "x-request-id", Value: plugintest.RequestID}}
	size := 0
	for _, c := range req.Chunks {
		size += len(c)
	}
	if len(req.Chunks) > 0 && !req.NoContentLength {
		hdrs = append(hdrs, host.Header{Name: "content-length", Value: strconv.Itoa(size)})
	}
	for _, kv := range req.Headers {
		hdrs = append(hdrs, host.Header{Name: kv[0], Value: kv[1]})
	}
	eosReleased := false
	step := func(r host.Result, err error) (bool, error) {
		if r.Headers != nil {
			x.upstream = r.Headers
		}
		if r.EndOfStream {
			eosReleased = true
		}
		if r.Reply != nil {
			x.reply = r.Reply
			return true, nil
		}
		return false, err
	}
	stepCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	withTrailers := len(trailers) > 0
	done, err := step(st.SendRequestHeaders(stepCtx, hdrs, len(req.Chunks) == 0 && !withTrailers))
	for i := 0; !done && err == nil && i < len(req.Chunks); i++ {
		done, err = step(st.SendRequestBody(stepCtx, []byte(req.Chunks[i]), i == len(req.Chunks)-1 && !withTrailers))
	}
	if !done && err == nil && withTrailers {
		var t host.Headers
		for _, kv := range trailers {
			t = append(t, host.Header{Name: kv[0], Value: kv[1]})
		}
		done, err = step(st.SendRequestTrailers(stepCtx, t))
	}
	if err != nil && !done {
		x.stuck = true
	}
	if done || x.stuck {
		return x, nil
	}
	x.forwarded = x.upstream != nil && eosReleased
	if !x.forwarded || response == nil {
		return x, nil
	}
	var hs host.Headers
	for _, kv := range response {
		hs = append(hs, host.Header{Name: kv[0], Value: kv[1]})
	}
	withTrailers = len(c.ResponseTrailers) > 0
	r, err := st.SendResponseHeaders(stepCtx, hs, len(c.ResponseBody) == 0 && !withTrailers)
	if err != nil {
		return x, err
	}
	x.client = r.Headers
	if r.Reply != nil {
		x.client = append(host.Headers{{Name: ":status", Value: strconv.Itoa(r.Reply.Status)}}, r.Reply.Headers...)
	}
	x.clientBody = r.Body
	for i, ch := range c.ResponseBody {
		r, err := st.SendResponseBody(stepCtx, []byte(ch), i == len(c.ResponseBody)-1 && !withTrailers)
		if err != nil {
			return x, err
		}
		x.clientBody = append(x.clientBody, r.Body...)
	}
	if withTrailers {
		var t host.Headers
		for _, kv := range c.ResponseTrailers {
			t = append(t, host.Header{Name: kv[0], Value: kv[1]})
		}
		r, err := st.SendResponseTrailers(stepCtx, t)
		if err != nil {
			return x, err
		}
		x.clientBody = append(x.clientBody, r.Body...)
	}
	return x, nil
}

// NewHost starts a host running m with plugintest.Config and check as the token service.
func NewHost(ctx context.Context, m *host.Module, check *CheckServer, adjust func(*host.Options)) (*host.Host, error) {
	o := host.Options{
		Workers:      1,
		PluginConfig: plugintest.Config(),
		Clusters:     map[string]host.Cluster{plugintest.Cluster: {Handler: check}},
	}
	if adjust != nil {
		adjust(&o)
	}
	return host.New(ctx, m, o)
}
