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

// CheckServer answers check calls with plugintest.AnswerCheck and counts them. A call the
// scenarios want to fail makes the handler abort, which the host reports as a failed call.
type CheckServer struct {
	Calls atomic.Int64
}

func (c *CheckServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.Calls.Add(1)
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	a := plugintest.AnswerCheck(r.Header.Get("X-Gateway-Filter-Key"), body)
	if a.Fail {
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.Status)
	_, _ = io.WriteString(w, a.Body)
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

// Run sends one scenario request through the host, as Envoy's connection manager would.
func Run(ctx context.Context, h *host.Host, check *CheckServer, req plugintest.Request) (plugintest.Result, error) {
	callsBefore := check.Calls.Load()
	logsBefore := len(h.GuestLogs(host.LogTrace))
	st, err := h.NewStream(ctx, host.StreamInfo{})
	if err != nil {
		return plugintest.Result{}, err
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
	var res plugintest.Result
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
	done, err := step(st.SendRequestHeaders(stepCtx, hdrs, len(req.Chunks) == 0))
	for i := 0; !done && err == nil && i < len(req.Chunks); i++ {
		done, err = step(st.SendRequestBody(stepCtx, []byte(req.Chunks[i]), i == len(req.Chunks)-1))
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
	}
	return res, nil
}
