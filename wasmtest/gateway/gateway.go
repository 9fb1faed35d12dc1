package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/wasmtest/host"
)

// Limits of the local gateway.
const (
	// MaxRequestBody bounds a request body the local gateway collects (Envoy's buffer limit
	// plays this part in a mesh).
	MaxRequestBody = 16 << 20
	// StepTimeout bounds how long the filter may hold a request or response step.
	StepTimeout = 30 * time.Second
)

// TokenService is the token service as the local gateway reaches it: its public handler (the
// gateway paths and the authenticate host) and its internal handler (the check API cluster).
type TokenService struct {
	Public   http.Handler
	Internal http.Handler
}

// Options configure a Gateway.
type Options struct {
	// Config is the validated gateway configuration.
	Config *config.Config
	// Module is the compiled filter.wasm.
	Module *host.Module
	// Workers is the number of filter VMs (Envoy worker threads); default 2.
	Workers int
	// TokenService serves gateway paths and check calls.
	TokenService TokenService
	// Transport carries requests to upstreams; default a transport with dial and header
	// timeouts and no proxy from the environment.
	Transport http.RoundTripper
	// Logger receives the filter's log lines and the gateway's own; default discards.
	Logger *slog.Logger
	// HostOptions, if set, adjusts the wasm host options (tests: clock, compat, fail strategy).
	HostOptions func(*host.Options)
}

// Gateway is the local gateway's handler.
type Gateway struct {
	cfg       *config.Config
	host      *host.Host
	table     *pluginconf.Table
	upstreams []*url.URL // by route index of table
	auth      string     // authenticate host authority
	public    http.Handler
	transport http.RoundTripper
	logger    *slog.Logger
}

// New starts the filter VMs and prepares routing.
func New(ctx context.Context, o Options) (*Gateway, error) {
	if o.Config == nil || o.Module == nil {
		return nil, errors.New("gateway: Config and Module are required")
	}
	if o.TokenService.Public == nil || o.TokenService.Internal == nil {
		return nil, errors.New("gateway: TokenService handlers are required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	pc := o.Config.PluginConfig()
	g := &Gateway{cfg: o.Config, table: pluginconf.NewTable(pc.Routes), public: o.TokenService.Public, logger: o.Logger}
	for i, r := range pc.Routes {
		if r.Scheme != "http" {
			return nil, fmt.Errorf("gateway: route %s: the local gateway serves plain-http loopback routes only; run https routes in Envoy or Istio", r.ID)
		}
		cr, _ := o.Config.RouteByID(r.ID)
		u, err := url.Parse(cr.To)
		if err != nil {
			return nil, fmt.Errorf("gateway: routes[%d].to: %w", i, err)
		}
		g.upstreams = append(g.upstreams, u)
	}
	if u, err := url.Parse(o.Config.AuthenticateServiceURL); err == nil {
		g.auth = strings.ToLower(u.Host)
	}
	g.transport = o.Transport
	if g.transport == nil {
		g.transport = &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			ResponseHeaderTimeout: 60 * time.Second,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
		}
	}
	ho := host.Options{
		Workers:      o.Workers,
		PluginName:   "mcp-gateway",
		RootID:       "mcp-gateway",
		VMID:         "mcp-gateway",
		PluginConfig: o.Config.PluginConfigJSON(),
		Clusters:     map[string]host.Cluster{o.Config.TokenService.Cluster: {Handler: o.TokenService.Internal}},
		LogLevel:     host.LogInfo,
		Logger:       o.Logger,
	}
	if o.HostOptions != nil {
		o.HostOptions(&ho)
	}
	h, err := host.New(ctx, o.Module, ho)
	if err != nil {
		return nil, fmt.Errorf("gateway: start filter: %w", err)
	}
	g.host = h
	return g, nil
}

// Host returns the wasm host running the filter.
func (g *Gateway) Host() *host.Host { return g.host }

// Close stops the filter VMs.
func (g *Gateway) Close() error { return g.host.Close() }

// Addresses returns the host:port pairs the gateway must listen on: each route's `from`
// authority and the authenticate service's.
func (g *Gateway) Addresses() []string {
	seen := map[string]bool{}
	add := func(raw string) {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return
		}
		a := u.Host
		if u.Port() == "" {
			a = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
		}
		seen[a] = true
	}
	add(g.cfg.AuthenticateServiceURL)
	for _, r := range g.cfg.Routes {
		add(r.From)
	}
	out := make([]string, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// ServeHTTP runs one request through the filter and routes it.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rawPath := r.RequestURI
	if rawPath == "" || !strings.HasPrefix(rawPath, "/") {
		rawPath = r.URL.RequestURI()
	}
	st, err := g.host.NewStream(r.Context(), host.StreamInfo{
		SourceAddress:      r.RemoteAddr,
		DestinationAddress: localAddr(r),
		Protocol:           r.Proto,
	})
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "filter_unavailable", "the gateway filter is not available")
		return
	}
	defer st.Close()

	released, body, reply, err := g.decodeRequest(r, st, rawPath)
	switch {
	case reply != nil:
		writeReply(w, reply)
		return
	case errors.Is(err, errTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", "request body too large")
		return
	case err != nil:
		g.logger.Warn("filter step failed", "err", err)
		writeError(w, http.StatusServiceUnavailable, "filter_failed", "the gateway filter did not release the request")
		return
	}

	idx, m := g.table.Match(r.Host, rawPath)
	switch {
	case m == pluginconf.GatewayPath || (m == pluginconf.ForeignHost && strings.EqualFold(r.Host, g.auth)):
		r2 := r.Clone(r.Context())
		r2.Body = io.NopCloser(bytes.NewReader(body))
		r2.ContentLength = int64(len(body))
		g.public.ServeHTTP(w, r2)
	case m == pluginconf.Routed:
		g.forward(w, r, st, idx, rawPath, released, body)
	case m == pluginconf.ForeignHost:
		writeError(w, http.StatusMisdirectedRequest, "misdirected_request", "this gateway serves no such host")
	default:
		writeError(w, http.StatusNotFound, "not_found", "no route for this path")
	}
}

var errTooLarge = errors.New("request body too large")

// decodeRequest gives the request to the filter: headers, then the body chunk by chunk. It
// returns the released headers and body, or the filter's local reply.
func (g *Gateway) decodeRequest(r *http.Request, st *host.Stream, rawPath string) (host.Headers, []byte, *host.LocalReply, error) {
	hdrs := host.Headers{
		{Name: ":method", Value: r.Method},
		{Name: ":path", Value: rawPath},
		{Name: ":authority", Value: r.Host},
		{Name: ":scheme", Value: "http"},
	}
	for name, vals := range r.Header {
		if hopByHop(name) {
			continue
		}
		for _, v := range vals {
			hdrs = append(hdrs, host.Header{Name: strings.ToLower(name), Value: v})
		}
	}
	if r.ContentLength > 0 {
		hdrs = append(hdrs, host.Header{Name: "content-length", Value: strconv.FormatInt(r.ContentLength, 10)})
	}
	hasBody := r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
	step := func(f func(context.Context) (host.Result, error)) (host.Result, error) {
		ctx, cancel := context.WithTimeout(r.Context(), StepTimeout)
		defer cancel()
		return f(ctx)
	}
	var released host.Headers
	var body []byte
	res, err := step(func(ctx context.Context) (host.Result, error) { return st.SendRequestHeaders(ctx, hdrs, !hasBody) })
	if res.Reply != nil {
		return nil, nil, res.Reply, nil
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if res.Headers != nil {
		released = res.Headers
	}
	body = append(body, res.Body...)
	if hasBody {
		buf := make([]byte, 32<<10)
		total := 0
		for {
			n, rerr := r.Body.Read(buf)
			total += n
			if total > MaxRequestBody {
				return nil, nil, nil, errTooLarge
			}
			eos := rerr == io.EOF
			if rerr != nil && !eos {
				return nil, nil, nil, fmt.Errorf("read request body: %w", rerr)
			}
			if n == 0 && !eos {
				continue
			}
			chunk := append([]byte(nil), buf[:n]...)
			res, err = step(func(ctx context.Context) (host.Result, error) { return st.SendRequestBody(ctx, chunk, eos) })
			if res.Reply != nil {
				return nil, nil, res.Reply, nil
			}
			if err != nil {
				return nil, nil, nil, err
			}
			if res.Headers != nil {
				released = res.Headers
			}
			body = append(body, res.Body...)
			if eos {
				break
			}
		}
	}
	if released == nil {
		return nil, nil, nil, errors.New("the filter released no request headers")
	}
	return released, body, nil, nil
}

// forward sends the released request to the route's upstream and streams the response back
// through the filter.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, st *host.Stream, idx int, rawPath string, released host.Headers, body []byte) {
	target := g.upstreams[idx]
	prefix := g.table.Route(idx).PathPrefix
	path, query, _ := strings.Cut(rawPath, "?")
	if prefix != "/" {
		path = strings.TrimPrefix(path, prefix)
	}
	path = strings.TrimSuffix(target.EscapedPath(), "/") + path
	if path == "" || path[0] != '/' {
		path = "/" + path
	}
	u := target.Scheme + "://" + target.Host + path
	if query != "" {
		u += "?" + query
	}
	out, err := http.NewRequestWithContext(r.Context(), released.Value(":method"), u, bytes.NewReader(body))
	if err != nil {
		writeError(w, http.StatusBadGateway, "bad_gateway", "cannot build the upstream request")
		return
	}
	out.ContentLength = int64(len(body))
	for _, h := range released {
		if strings.HasPrefix(h.Name, ":") || hopByHop(h.Name) || h.Name == "content-length" {
			continue
		}
		out.Header.Add(h.Name, h.Value)
	}
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		out.Header.Set("X-Forwarded-For", ip)
	}
	out.Header.Set("X-Forwarded-Proto", "http")
	out.Header.Set("X-Forwarded-Host", r.Host)
	resp, err := g.transport.RoundTrip(out)
	if err != nil {
		g.logger.Warn("upstream unreachable", "route", g.table.Route(idx).ID, "err", err)
		writeError(w, http.StatusBadGateway, "bad_gateway", "the upstream of this route is unreachable")
		return
	}
	defer resp.Body.Close()
	g.encodeResponse(w, st, resp)
}

// encodeResponse gives the upstream response to the filter and writes what it releases,
// flushing each chunk.
func (g *Gateway) encodeResponse(w http.ResponseWriter, st *host.Stream, resp *http.Response) {
	hdrs := host.Headers{{Name: ":status", Value: strconv.Itoa(resp.StatusCode)}}
	for name, vals := range resp.Header {
		if hopByHop(name) {
			continue
		}
		for _, v := range vals {
			hdrs = append(hdrs, host.Header{Name: strings.ToLower(name), Value: v})
		}
	}
	noBody := resp.ContentLength == 0
	ctx, cancel := context.WithTimeout(context.Background(), StepTimeout)
	res, err := st.SendResponseHeaders(ctx, hdrs, noBody)
	cancel()
	if res.Reply != nil {
		writeReply(w, res.Reply)
		return
	}
	if err != nil || res.Headers == nil {
		writeError(w, http.StatusBadGateway, "filter_failed", "the gateway filter did not release the response")
		return
	}
	status := resp.StatusCode
	for _, h := range res.Headers {
		if h.Name == ":status" {
			status, _ = strconv.Atoi(h.Value)
			continue
		}
		w.Header().Add(h.Name, h.Value)
	}
	w.WriteHeader(status)
	flusher, _ := w.(http.Flusher)
	if len(res.Body) > 0 {
		_, _ = w.Write(res.Body)
	}
	if noBody {
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		eos := rerr != nil
		if n == 0 && !eos {
			continue
		}
		chunk := append([]byte(nil), buf[:n]...)
		ctx, cancel := context.WithTimeout(context.Background(), StepTimeout)
		res, err := st.SendResponseBody(ctx, chunk, eos)
		cancel()
		if err != nil && res.Body == nil {
			return
		}
		if len(res.Body) > 0 {
			if _, werr := w.Write(res.Body); werr != nil {
				return
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		if eos {
			return
		}
	}
}

func writeReply(w http.ResponseWriter, rep *host.LocalReply) {
	for _, h := range rep.Headers {
		if !strings.HasPrefix(h.Name, ":") {
			w.Header().Add(h.Name, h.Value)
		}
	}
	w.WriteHeader(rep.Status)
	_, _ = w.Write(rep.Body)
}

func writeError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":%q,"error_description":%q}`, code, description)
}

func localAddr(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return a.String()
	}
	return ""
}

// hopByHop reports connection-level headers that a proxy does not forward.
func hopByHop(name string) bool {
	switch strings.ToLower(name) {
	case "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host":
		return true
	}
	return false
}
