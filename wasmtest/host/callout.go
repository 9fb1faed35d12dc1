package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"
)

// callResponse is the response of a proxy_http_call while proxy_on_http_call_response runs.
type callResponse struct {
	headers, trailers Headers
	body              []byte
	failed            bool // delivered with zero headers
}

// hHTTPCall is proxy_http_call. Like cpp-host it always issues the call on the root context,
// so the response arrives as proxy_on_http_call_response(root_context_id, ...). Envoy answers
// BAD_ARGUMENT for an unknown cluster, a negative timeout and missing :method, :path or
// :authority.
func hHTTPCall(v *vm, s []uint64) {
	cluster, ok1 := v.readString(uint32(s[0]), uint32(s[1]))
	hdrRaw, ok2 := v.read(uint32(s[2]), uint32(s[3]))
	var headers Headers
	if ok2 {
		headers = toPairs(hdrRaw)
	}
	body, ok3 := v.readCopy(uint32(s[4]), uint32(s[5]))
	trlRaw, ok4 := v.read(uint32(s[6]), uint32(s[7]))
	if !ok1 || !ok2 || !ok3 || !ok4 {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	trailers := toPairs(trlRaw)
	timeout, tokenPtr := int32(uint32(s[8])), uint32(s[9])
	if !v.writeU32(tokenPtr, 0) {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	if timeout < 0 {
		ret(s, StatusBadArgument)
		return
	}
	cl, ok := v.host.opts.Clusters[cluster]
	if !ok {
		v.hostLog(LogDebug, "proxy_http_call: unknown cluster "+strconv.Quote(cluster))
		ret(s, StatusBadArgument)
		return
	}
	lower := make(Headers, 0, len(headers))
	for _, h := range headers {
		lower.add(h.Name, h.Value)
	}
	for _, need := range []string{":path", ":method", ":authority"} {
		if !lower.Has(need) {
			v.hostLog(LogDebug, "proxy_http_call: missing "+need)
			ret(s, StatusBadArgument)
			return
		}
	}
	v.nextCallID += 4 // cpp-host: ids step by 4, the low bits tell call kinds apart
	id := v.nextCallID
	ctx, cancel := context.WithCancel(v.host.ctx)
	v.calls[id] = cancel
	v.host.wg.Add(1)
	go v.host.runCall(ctx, v, id, cl, lower, body, trailers, time.Duration(timeout)*time.Millisecond)
	v.writeU32(tokenPtr, id)
	ret(s, StatusOK)
}

// runCall performs the call and delivers the response on the VM's serialized executor.
func (h *Host) runCall(ctx context.Context, v *vm, id uint32, cl Cluster, hdrs Headers, body []byte, trl Headers, timeout time.Duration) {
	defer h.wg.Done()
	rctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	resp := h.roundTrip(rctx, cl, hdrs, body, trl)
	if ctx.Err() != nil {
		return // the host or VM closed: Envoy cancels outstanding calls
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	cancel, live := v.calls[id]
	if !live {
		return
	}
	cancel()
	delete(v.calls, id)
	v.deliverCall(id, resp)
}

// deliverCall calls proxy_on_http_call_response on the root context. mu must be held.
func (v *vm) deliverCall(id uint32, r *callResponse) {
	if v.failed.Load() || v.exp.onHTTPCallResponse == nil {
		return
	}
	v.callResp = r
	if r.failed {
		v.statusCode, v.statusMsg = uint32(StatusBrokenConnection), "reset"
	}
	saved := v.current
	v.current = v.rootID
	nh, nt := uint64(len(r.headers)), uint64(len(r.trailers))
	if r.failed {
		nh, nt = 0, 0
	}
	_, _ = v.call(v.exp.onHTTPCallResponse, "proxy_on_http_call_response",
		uint64(v.rootID), uint64(id), nh, uint64(len(r.body)), nt)
	v.current = saved
	v.callResp = nil
	v.statusCode, v.statusMsg = 0, ""
	v.runAfter()
}

// Envoy's router answers for the async client when the upstream cannot: these are the bodies
// of those synthetic responses.
const (
	bodyTimeout        = "upstream request timeout"
	bodyConnectFailure = "upstream connect error or disconnect/reset before headers. reset reason: connection failure"
	bodyTermination    = "upstream connect error or disconnect/reset before headers. reset reason: connection termination"
)

// roundTrip sends the call to the cluster and classifies failures.
func (h *Host) roundTrip(ctx context.Context, cl Cluster, hdrs Headers, body []byte, trl Headers) *callResponse {
	var hresp *http.Response
	var err error
	if cl.Handler != nil {
		hresp, err = serveInProcess(ctx, cl.Handler, hdrs, body, trl)
	} else {
		hresp, err = h.send(ctx, cl.URL, hdrs, body, trl)
	}
	if err != nil {
		return h.callFailure(ctx, err)
	}
	defer hresp.Body.Close()
	limit := int64(h.opts.MaxCallResponseBytes)
	rb, err := io.ReadAll(io.LimitReader(hresp.Body, limit+1))
	if err != nil || int64(len(rb)) > limit {
		return &callResponse{failed: true} // reset after headers, or over the buffer limit
	}
	r := &callResponse{body: rb}
	r.headers.add(":status", strconv.Itoa(hresp.StatusCode))
	addHTTPHeaders(&r.headers, hresp.Header)
	addHTTPHeaders(&r.trailers, hresp.Trailer)
	return r
}

func (h *Host) callFailure(ctx context.Context, err error) *callResponse {
	if h.opts.CallFailures == CallFailureReset {
		return &callResponse{failed: true}
	}
	var status int
	var body string
	var op *net.OpError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		status, body = 504, bodyTimeout
	case errors.As(err, &op) && op.Op == "dial":
		status, body = 503, bodyConnectFailure
	default:
		status, body = 503, bodyTermination
	}
	r := &callResponse{body: []byte(body)}
	r.headers.add(":status", strconv.Itoa(status))
	r.headers.add("content-length", strconv.Itoa(len(body)))
	r.headers.add("content-type", "text/plain")
	return r
}

func addHTTPHeaders(dst *Headers, src http.Header) {
	for name, vals := range src {
		for _, val := range vals {
			dst.add(name, val)
		}
	}
}

// buildRequest turns the call's pseudo and regular headers into an http.Request for base.
func buildRequest(ctx context.Context, base string, hdrs Headers, body []byte, trl Headers) (*http.Request, error) {
	path := hdrs.Value(":path")
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	req, err := http.NewRequestWithContext(ctx, hdrs.Value(":method"), strings.TrimSuffix(base, "/")+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build call request: %w", err)
	}
	req.Host = hdrs.Value(":authority")
	for _, f := range hdrs {
		if strings.HasPrefix(f.Name, ":") || f.Name == "host" || f.Name == "content-length" {
			continue
		}
		req.Header.Add(f.Name, f.Value) // canonical keys, as a server would see them
	}
	if len(trl) > 0 {
		req.Trailer = http.Header{}
		for _, f := range trl {
			req.Trailer[f.Name] = append(req.Trailer[f.Name], f.Value)
		}
		req.ContentLength = -1
	}
	return req, nil
}

func (h *Host) send(ctx context.Context, base string, hdrs Headers, body []byte, trl Headers) (*http.Response, error) {
	req, err := buildRequest(ctx, base, hdrs, body, trl)
	if err != nil {
		return nil, err
	}
	return h.opts.HTTPClient.Do(req)
}

// serveInProcess runs handler for the call, giving up when ctx ends.
func serveInProcess(ctx context.Context, handler http.Handler, hdrs Headers, body []byte, trl Headers) (*http.Response, error) {
	req, err := buildRequest(ctx, "http://in-process", hdrs, body, trl)
	if err != nil {
		return nil, err
	}
	req.RequestURI = req.URL.RequestURI()
	req.RemoteAddr = "127.0.0.1:0"
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	var panicked any
	go func() {
		defer close(done)
		defer func() { panicked = recover() }()
		handler.ServeHTTP(rec, req)
	}()
	select {
	case <-done:
		if panicked != nil {
			return nil, fmt.Errorf("cluster handler panicked: %v", panicked)
		}
		return rec.Result(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
