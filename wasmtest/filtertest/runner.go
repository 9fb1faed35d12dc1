package filtertest

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/wasmtest/host"
)

// CheckServer answers check calls with a case's Answer (or AnswerCheck), optionally late.
type CheckServer struct {
	// Calls counts the check calls.
	Calls  atomic.Int64
	answer atomic.Pointer[func(string, []byte) plugintest.CheckAnswer]
	delay  atomic.Int64 // nanoseconds
}

func (c *CheckServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.Calls.Add(1)
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

// RunCase sends one request through h, as Envoy's connection manager would, trailers
// included, and reports what the client, the upstream and the log saw.
func RunCase(ctx context.Context, h *host.Host, check *CheckServer, req plugintest.Request, trailers [][2]string) (plugintest.RedTeamResult, error) {
	return runCase(ctx, h, check, req, trailers, nil)
}

// runCase is RunCase; when the request is forwarded and response is set, the upstream then
// answers with the response headers, and the result holds those the client receives.
func runCase(ctx context.Context, h *host.Host, check *CheckServer, req plugintest.Request, trailers, response [][2]string) (plugintest.RedTeamResult, error) {
	callsBefore := check.Calls.Load()
	logsBefore := len(h.GuestLogs(host.LogTrace))
	st, err := h.NewStream(ctx, host.StreamInfo{})
	if err != nil {
		return plugintest.RedTeamResult{}, err
	}
	defer st.Close()
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
	var res plugintest.RedTeamResult
	var released host.Headers
	eosReleased := false
	step := func(r host.Result, err error) (bool, error) {
		if r.Headers != nil {
			released = r.Headers
		}
		if r.EndOfStream {
			eosReleased = true
		}
		if r.Reply != nil {
			res.Status, res.Body = r.Reply.Status, string(r.Reply.Body)
			res.ReplyHeaders = map[string]string{}
			for _, h := range r.Reply.Headers {
				res.ReplyHeaders[h.Name] = h.Value
			}
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
		res.Stuck = true
	}
	res.CheckCalls = int(check.Calls.Load() - callsBefore)
	res.Logs = h.GuestLogs(host.LogTrace)[logsBefore:]
	if res.Status != 0 || res.Stuck {
		return res, nil
	}
	res.Forwarded = released != nil && eosReleased
	res.Upstream = map[string]string{}
	for _, h := range released {
		res.Upstream[h.Name] = h.Value
		res.UpstreamAll = append(res.UpstreamAll, [2]string{h.Name, h.Value})
	}
	if res.Forwarded && response != nil {
		var hs host.Headers
		for _, kv := range response {
			hs = append(hs, host.Header{Name: kv[0], Value: kv[1]})
		}
		r, err := st.SendResponseHeaders(stepCtx, hs, true)
		if err != nil {
			return res, err
		}
		out := r.Headers
		if r.Reply != nil {
			out = append(host.Headers{{Name: ":status", Value: strconv.Itoa(r.Reply.Status)}}, r.Reply.Headers...)
		}
		res.ClientResponse = map[string]string{}
		for _, h := range out {
			res.ClientResponse[h.Name] = h.Value
		}
	}
	return res, nil
}

// NewHost starts a host running m with the scenarios' configuration and check server.
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

// Run sends one scenario request through the host.
func Run(ctx context.Context, h *host.Host, check *CheckServer, req plugintest.Request) (plugintest.Result, error) {
	r, err := RunCase(ctx, h, check, req, nil)
	return r.Result, err
}
