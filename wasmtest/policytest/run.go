package policytest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/host"
)

// Tester plays cases through filter.wasm under one plugin configuration. It holds no state
// between cases: each case runs on a host of its own, so that no decision cache or MCP
// session carries over from one case to the next.
type Tester struct {
	module *host.Module
	base   host.Options // the host options of every case; Clusters is set per case
	pc     *pluginconf.Config
	table  *pluginconf.Table
	// Parallel bounds how many cases run at once; default the number of CPUs, at most 8.
	Parallel int
	// SessionKey, if set, derives the MCP session key the token service hands out for a
	// subject on a route (any per-user, per-route key will do; the default hashes both).
	SessionKey func(sub, routeID string) string
}

// Load loads the gateway configuration at configPath as the local gateway does
// (config.Load: strict, with the environment overrides) and returns a Tester running module
// under the plugin configuration the local gateway gives the filter. A configuration problem
// is a *ConfigError naming the key and its line.
func Load(configPath string, module *host.Module) (*Tester, error) {
	cfg, err := config.Load(configPath)
	if err != nil {
		return nil, configError(configPath, err)
	}
	return New(cfg, module), nil
}

// New returns a Tester running module with the host options of the local gateway for cfg
// (gateway.FilterOptions), one VM per case.
func New(cfg *config.Config, module *host.Module) *Tester {
	o := gateway.FilterOptions(cfg, nil)
	o.Workers = 1
	return &Tester{module: module, base: o, pc: cfg.PluginConfig(), table: pluginconf.NewTable(cfg.PluginConfig().Routes)}
}

// NewPlugin returns a Tester running module with a raw plugin configuration (the JSON the
// filter reads), for configurations that do not come from a gateway YAML file, such as the
// filter's own scenario suite (filter/plugin/plugintest).
func NewPlugin(pluginConfig []byte, module *host.Module) (*Tester, error) {
	pc, err := pluginconf.Parse(pluginConfig)
	if err != nil {
		return nil, err
	}
	o := host.Options{Workers: 1, PluginConfig: pluginConfig, LogLevel: host.LogInfo}
	return &Tester{module: module, base: o, pc: pc, table: pluginconf.NewTable(pc.Routes)}, nil
}

// WithModule returns a copy of t that runs module (Load may be given a nil module to check a
// configuration before the module is built).
func (t *Tester) WithModule(module *host.Module) *Tester {
	c := *t
	c.module = module
	return &c
}

// Routes returns the routes of the plugin configuration, most specific first.
func (t *Tester) Routes() []pluginconf.Route { return t.pc.Routes }

// Outcome is what became of a request.
type Outcome struct {
	// Forwarded is true when the filter let the whole request go on to the upstream.
	Forwarded bool
	// Status is the status of the filter's own answer (0 when forwarded).
	Status int
	// Body is the filter's own answer.
	Body string
	// Stuck means the filter neither answered nor released the request.
	Stuck bool
}

// String renders the outcome as the report shows it.
func (o Outcome) String() string {
	switch {
	case o.Stuck:
		return "stuck (neither answered nor forwarded)"
	case o.Forwarded:
		return Allow
	}
	return fmt.Sprintf("deny %d", o.Status)
}

// Result is what a case produced and how it compares with its expectation.
type Result struct {
	Case    Case
	Outcome Outcome
	// Route is the route the request matched (nil when none).
	Route *pluginconf.Route
	// Records are the authorization records the filter wrote for the request (one per
	// message of a batch).
	Records []Record
	// Problems says how the outcome falls short of Case.Expect; empty when the case passed.
	Problems []string
}

// Passed reports whether the case met its expectation.
func (r *Result) Passed() bool { return len(r.Problems) == 0 }

// Run plays every case and returns their results in order. The error is for cases that
// could not be run at all (an unknown route, a host that would not start), not for cases
// whose outcome differs from their expectation: those are results with Problems.
func (t *Tester) Run(ctx context.Context, cases []Case) ([]Result, error) {
	results := make([]Result, len(cases))
	errs := make([]error, len(cases))
	n := t.Parallel
	if n <= 0 {
		n = min(runtime.NumCPU(), 8)
	}
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i := range cases {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i], errs[i] = t.runCase(ctx, cases[i])
			if errs[i] != nil {
				errs[i] = fmt.Errorf("case %q: %w", cases[i].Name, errs[i])
			}
		}()
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// request is a case as the proxy hands it to the filter.
type request struct {
	method, scheme, authority, path string
	headers                         [][2]string
	chunks                          []string
}

func (t *Tester) runCase(ctx context.Context, c Case) (Result, error) {
	res := Result{Case: c}
	req, err := t.build(c)
	if err != nil {
		return res, err
	}
	if i, m := t.table.Match(req.authority, req.path); m == pluginconf.Routed {
		r := t.table.Route(i)
		res.Route = &r
	}
	o := t.base
	o.Clusters = map[string]host.Cluster{t.pc.Cluster: {Handler: &checkServer{c: c, key: t.pc.FilterKey, routes: t.pc.Routes, sessionKey: t.SessionKey}}}
	h, err := host.New(ctx, t.module, o)
	if err != nil {
		return res, fmt.Errorf("start filter: %w", err)
	}
	defer h.Close()
	res.Outcome, err = send(ctx, h, req)
	if err != nil {
		return res, err
	}
	for _, line := range h.GuestLogs(host.LogInfo) {
		if r, ok := parseRecord(line); ok {
			res.Records = append(res.Records, r)
		}
	}
	res.Problems = compare(c.Expect, res.Outcome, res.Records)
	return res, nil
}

// build turns a case into the request the proxy hands the filter.
func (t *Tester) build(c Case) (request, error) {
	var req request
	target := c.URL
	if target == "" && c.Route == "" && c.Authority != "" {
		target = "https://placeholder/"
	}
	if target == "" {
		r, ok := t.route(c.Route)
		if !ok {
			return req, fmt.Errorf("no route named %q or with that from URL", c.Route)
		}
		target = r.Scheme + "://" + r.Host + strings.TrimSuffix(r.PathPrefix, "/") + c.Path
	}
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return req, fmt.Errorf("url %q: want an absolute URL", target)
	}
	req.scheme, req.authority, req.path = u.Scheme, u.Host, u.RequestURI()
	if c.Authority != "" {
		req.authority, req.path = c.Authority, c.RawPath
	}
	if c.URL == "" && c.Path == "" && u.Path == "" {
		req.path = "/"
	}
	req.chunks = c.Chunks
	if req.chunks == nil {
		body, err := c.body()
		if err != nil {
			return req, err
		}
		if body != "" || c.Body != nil {
			req.chunks = []string{body}
		}
	}
	req.method = c.HTTPMethod
	if req.method == "" {
		req.method = "GET"
		if len(req.chunks) > 0 {
			req.method = "POST"
		}
	}
	size := 0
	for _, ch := range req.chunks {
		size += len(ch)
	}
	var defaults [][2]string
	if len(req.chunks) > 0 {
		defaults = append(defaults, [2]string{"content-type", "application/json"}, [2]string{"accept", "application/json, text/event-stream"})
	} else if req.method == "GET" {
		defaults = append(defaults, [2]string{"accept", "text/event-stream"})
	}
	if c.Identity != nil || (c.TokenService != "" && c.TokenService != "ok") {
		cred := "policytest-" + strconv.Itoa(c.Line) + "-" + fmt.Sprintf("%x", sha256.Sum256([]byte(c.Name)))[:12]
		kind := pluginconf.KindServer
		if i, m := t.table.Match(req.authority, req.path); m == pluginconf.Routed {
			kind = t.table.Route(i).Kind
		}
		if kind == pluginconf.KindServer {
			defaults = append(defaults, [2]string{"authorization", "Bearer " + cred})
		} else {
			defaults = append(defaults, [2]string{"cookie", checkapi.SessionCookie + "=" + cred})
		}
	}
	if len(req.chunks) > 0 && !c.NoContentLength {
		req.headers = append(req.headers, [2]string{"content-length", strconv.Itoa(size)})
	}
	if c.NoDefaultHeaders {
		defaults = nil
	}
	for _, d := range defaults {
		if !hasHeader(c.Headers, d[0]) && !(d[0] == "cookie" && hasHeader(c.Headers, "authorization")) &&
			!(d[0] == "authorization" && hasHeader(c.Headers, "cookie")) {
			req.headers = append(req.headers, d)
		}
	}
	req.headers = append(req.headers, c.Headers...)
	return req, nil
}

func hasHeader(hs [][2]string, name string) bool {
	for _, h := range hs {
		if strings.EqualFold(h[0], name) {
			return true
		}
	}
	return false
}

// route finds a route by name or by from URL.
func (t *Tester) route(ref string) (pluginconf.Route, bool) {
	for _, r := range t.pc.Routes {
		if r.Name == ref && ref != "" {
			return r, true
		}
	}
	if n, problem := config.NormalizeFrom(ref); problem == "" {
		for _, r := range t.pc.Routes {
			if r.ID == n.ID {
				return r, true
			}
		}
	}
	return pluginconf.Route{}, false
}

// body returns the case's body: its raw body, or its message or batch as JSON, padded.
func (c *Case) body() (string, error) {
	var b []byte
	switch {
	case c.Body != nil:
		b = []byte(*c.Body)
	case c.Message != nil:
		m, err := c.Message.json(1)
		if err != nil {
			return "", err
		}
		b = m
	case len(c.Batch) > 0:
		b = append(b, '[')
		for i, msg := range c.Batch {
			m, err := msg.json(i + 1)
			if err != nil {
				return "", err
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, m...)
		}
		b = append(b, ']')
	}
	for len(b) < c.PadBodyTo {
		b = append(b, ' ')
	}
	return string(b), nil
}

// json encodes m as a JSON-RPC message, with id defaultID for a request without one.
func (m *Message) json(defaultID int) ([]byte, error) {
	b := []byte(`{"jsonrpc":"2.0"`)
	id := m.ID
	if id == nil && !strings.HasPrefix(m.Method, "notifications/") {
		id = defaultID
	}
	if id != nil {
		v, err := json.Marshal(id)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"id":`...), v...)
	}
	v, _ := json.Marshal(m.Method)
	b = append(append(b, `,"method":`...), v...)
	params := m.Params
	if params == nil && m.Method == "tools/call" {
		args := m.Arguments
		if args == nil {
			args = map[string]any{}
		}
		p, err := json.Marshal(map[string]any{"name": m.Tool, "arguments": jsonValue(args)})
		if err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
		params = p
	}
	if params != nil {
		b = append(append(b, `,"params":`...), params...)
	}
	return append(b, '}'), nil
}

// send gives req to the filter as Envoy's connection manager would and reports the outcome.
func send(ctx context.Context, h *host.Host, req request) (Outcome, error) {
	var out Outcome
	st, err := h.NewStream(ctx, host.StreamInfo{})
	if err != nil {
		return out, err
	}
	defer st.Close()
	hdrs := host.Headers{{Name: ":method", Value: req.method}, {Name: ":path", Value: req.path},
		{Name: ":authority", Value: req.authority}, {Name: ":scheme", Value: req.scheme}}
	for _, kv := range req.headers {
		hdrs = append(hdrs, host.Header{Name: kv[0], Value: kv[1]})
	}
	released, eos := false, false
	step := func(r host.Result, err error) (bool, error) {
		if r.Headers != nil {
			released = true
		}
		if r.EndOfStream {
			eos = true
		}
		if r.Reply != nil {
			out.Status, out.Body = r.Reply.Status, string(r.Reply.Body)
			return true, nil
		}
		return false, err
	}
	stepCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	done, err := step(st.SendRequestHeaders(stepCtx, hdrs, len(req.chunks) == 0))
	for i := 0; !done && err == nil && i < len(req.chunks); i++ {
		done, err = step(st.SendRequestBody(stepCtx, []byte(req.chunks[i]), i == len(req.chunks)-1))
	}
	switch {
	case done:
	case err != nil:
		out.Stuck = true
	default:
		out.Forwarded = released && eos
		out.Stuck = !out.Forwarded
	}
	return out, nil
}

// checkServer is the token service's check API for one case: it answers every check call
// with the case's identity (or its token service status), in the check API's wire types.
type checkServer struct {
	c          Case
	key        string
	routes     []pluginconf.Route
	sessionKey func(sub, routeID string) string
}

func (s *checkServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	resp, fail := s.answer(r.Header.Get(checkapi.KeyHeader), body)
	if fail {
		panic(http.ErrAbortHandler)
	}
	b, _ := json.Marshal(resp)
	status := checkapi.HTTPStatus(resp.Status)
	if status == 0 {
		status = http.StatusUnauthorized
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// answer is the check API's answer to a check call; fail means no answer at all.
func (s *checkServer) answer(key string, body []byte) (checkapi.Response, bool) {
	if key != s.key {
		return checkapi.Response{Status: "invalid_key", Error: "the filter key is wrong"}, false
	}
	var req checkapi.Request
	if err := json.Unmarshal(body, &req); err != nil {
		return checkapi.Response{Status: "bad_request"}, false
	}
	status := s.c.TokenService
	if status == "" {
		status = checkapi.StatusOK
		if s.c.Identity == nil {
			status = checkapi.StatusInvalidToken
		}
	}
	switch status {
	case TokenServiceUnavailable:
		return checkapi.Response{}, true
	case checkapi.StatusInvalidToken, checkapi.StatusNoSession:
		return checkapi.Response{Status: status, Error: status}, false
	}
	id := s.c.Identity.wire()
	if status == checkapi.StatusUpstreamRequired {
		return checkapi.Response{Status: status, Identity: id,
			ConnectURL: strings.TrimSuffix(req.RouteID, "/") + "/.gateway/mcp/connect"}, false
	}
	resp := checkapi.Response{
		Status:    checkapi.StatusOK,
		Identity:  id,
		Assertion: "policytest-assertion-for-" + req.Host,
		ExpiresAt: time.Now().Add(time.Hour).Unix(),
	}
	for _, r := range s.routes {
		if r.ID != req.RouteID {
			continue
		}
		if r.UpstreamOAuth2 {
			resp.UpstreamToken = "policytest-internal-token"
		}
	}
	if req.Token != "" && s.sessionKey != nil {
		resp.SessionKey = s.sessionKey(id.Subject, req.RouteID)
	} else if req.Token != "" {
		sum := sha256.Sum256([]byte("policytest-session-key\x00" + id.Subject + "\x00" + req.RouteID))
		resp.SessionKey = base64.RawURLEncoding.EncodeToString(sum[:])
	} else {
		resp.ClientToken = "policytest-external-token"
	}
	return resp, false
}

// wire is the identity as the check API carries it; the subject is the email when unset.
func (id *Identity) wire() *checkapi.Identity {
	if id == nil {
		return &checkapi.Identity{}
	}
	sub := id.Subject
	if sub == "" {
		sub = id.Email
	}
	return &checkapi.Identity{Subject: sub, Email: id.Email, Name: id.Name, Groups: id.Groups, Claims: id.Claims}
}

// BuildError is returned when filter.wasm cannot be read or compiled.
type BuildError struct{ Err error }

func (e *BuildError) Error() string { return "filter.wasm: " + e.Err.Error() }
func (e *BuildError) Unwrap() error { return e.Err }

// CompileFile reads and compiles the filter module at path.
func CompileFile(ctx context.Context, path string) (*host.Module, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &BuildError{err}
	}
	m, err := host.Compile(ctx, b, nil)
	if err != nil {
		return nil, &BuildError{err}
	}
	return m, nil
}
