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
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/host"
)

// Tester plays cases through filter.wasm under one plugin configuration. It holds no state
// between cases: each case runs on a host of its own (with its Before cases, which share it),
// so that no decision cache or MCP session carries over from one case to the next.
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
	// CheckAnswer, if set, is consulted first for every check call the filter makes (with the
	// right filter key): c is the case whose request made the call (a Before case or the case
	// itself), req the call as the check API carries it, with the credential in Token or
	// Cookie. It returns the HTTP status and body of the token service's answer, status 0
	// for no answer at all (an unavailable token service), or ok false to leave the call to
	// the built-in answer (c's Identity and TokenService, or those of the case whose
	// credential the call carries).
	CheckAnswer func(c Case, req checkapi.Request) (status int, body []byte, ok bool)
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
	// ReplyHeaders are the headers of the filter's own answer.
	ReplyHeaders [][2]string
	// Upstream are the request headers as the upstream receives them (when forwarded).
	Upstream [][2]string
	// Response and ResponseBody are what the client receives of the case's UpstreamResponse
	// (":status" first; nil when none was given or the request was not forwarded).
	Response     [][2]string
	ResponseBody string
	// CheckCalls counts the check calls the filter made for the request.
	CheckCalls int
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
	// Problems says how the outcome falls short of Case.Expect (and of the Expect of its
	// Before cases, when set); empty when the case passed.
	Problems []string
	// Before are the outcomes of the case's Before requests, in order.
	Before []Outcome
	// Logs are the lines the filter logged while handling the request (at the host's log
	// level; the records come from them).
	Logs []string
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
	trailers                        [][2]string
	response                        *Response
}

func (t *Tester) runCase(ctx context.Context, c Case) (Result, error) {
	res := Result{Case: c}
	for i, b := range c.Before {
		if len(b.Before) > 0 {
			return res, fmt.Errorf("before[%d]: a Before case has no Before cases of its own", i)
		}
	}
	check := &checkServer{key: t.pc.FilterKey, routes: t.pc.Routes, sessionKey: t.SessionKey, hook: t.CheckAnswer, creds: map[string]Case{}}
	o := t.base
	o.Clusters = map[string]host.Cluster{t.pc.Cluster: {Handler: check}}
	h, err := host.New(ctx, t.module, o)
	if err != nil {
		return res, fmt.Errorf("start filter: %w", err)
	}
	defer h.Close()
	session := ""
	for i, b := range c.Before {
		out, logs, err := t.play(ctx, h, check, b, session)
		if err != nil {
			return res, fmt.Errorf("before[%d]: %w", i, err)
		}
		res.Before = append(res.Before, out)
		if id, ok := clientSession(out); ok {
			session = id
		}
		if b.Expect.Decision != "" || b.Expect.Status != 0 {
			for _, p := range compare(b.Expect, out, records(logs)) {
				res.Problems = append(res.Problems, fmt.Sprintf("before[%d]: %s", i, p))
			}
		}
	}
	c = c.withSession(session)
	req, err := t.build(c)
	if err != nil {
		return res, err
	}
	if i, m := t.table.Match(req.authority, req.path); m == pluginconf.Routed {
		r := t.table.Route(i)
		res.Route = &r
	}
	res.Outcome, res.Logs, err = t.play(ctx, h, check, c, "")
	if err != nil {
		return res, err
	}
	res.Records = records(res.Logs)
	res.Problems = append(res.Problems, compare(c.Expect, res.Outcome, res.Records)...)
	return res, nil
}

// play sends one case's request through h (after its Before cases, on the same VM) with
// SessionPlaceholder standing for session, and returns its outcome and the lines logged.
func (t *Tester) play(ctx context.Context, h *host.Host, check *checkServer, c Case, session string) (Outcome, []string, error) {
	c = c.withSession(session)
	req, err := t.build(c)
	if err != nil {
		return Outcome{}, nil, err
	}
	check.play(c)
	calls := check.calls.Load()
	logsBefore := len(h.GuestLogs(host.LogTrace))
	out, err := send(ctx, h, req)
	if err != nil {
		return out, nil, err
	}
	out.CheckCalls = int(check.calls.Load() - calls)
	return out, h.GuestLogs(host.LogTrace)[logsBefore:], nil
}

func records(logs []string) []Record {
	var rs []Record
	for _, line := range logs {
		if r, ok := parseRecord(line); ok {
			rs = append(rs, r)
		}
	}
	return rs
}

// SessionPlaceholder in a case's header values, Path, URL or RawPath stands for the MCP
// session the client received in the answer to an earlier request of the case (Before):
// the Mcp-Session-Id of the response, or the session in the URL of a legacy (HTTP+SSE)
// endpoint event. It is replaced by "" when no earlier answer carried one.
const SessionPlaceholder = "$SESSION"

// withSession returns c with SessionPlaceholder replaced by session in its header values and,
// query-escaped, in its Path, URL and RawPath.
func (c Case) withSession(session string) Case {
	if len(c.Headers) > 0 {
		hs := make([][2]string, len(c.Headers))
		for i, h := range c.Headers {
			hs[i] = [2]string{h[0], strings.ReplaceAll(h[1], SessionPlaceholder, session)}
		}
		c.Headers = hs
	}
	q := url.QueryEscape(session)
	c.Path = strings.ReplaceAll(c.Path, SessionPlaceholder, q)
	c.URL = strings.ReplaceAll(c.URL, SessionPlaceholder, q)
	c.RawPath = strings.ReplaceAll(c.RawPath, SessionPlaceholder, q)
	return c
}

// legacySessionParam finds the session of a legacy endpoint event in a response body.
var legacySessionParam = regexp.MustCompile(`[?&](?:sessionId|session_id|sessionid)=([^&\s#]+)`)

// clientSession is the MCP session a client received in o: its Mcp-Session-Id, or the
// session in the URL of a legacy transport's endpoint event.
func clientSession(o Outcome) (string, bool) {
	for _, h := range o.Response {
		if strings.EqualFold(h[0], "mcp-session-id") {
			return h[1], true
		}
	}
	if m := legacySessionParam.FindStringSubmatch(o.ResponseBody); m != nil {
		id, err := url.QueryUnescape(m[1])
		return id, err == nil
	}
	return "", false
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
		cred := c.credential()
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
	req.trailers, req.response = c.Trailers, c.UpstreamResponse
	return req, nil
}

// credential is the token or cookie a case sends: the same for the same identity and token
// service answer, so that the requests of one case (Before) share decisions and sessions.
func (c *Case) credential() string {
	id, _ := json.Marshal(c.Identity.wire())
	return "policytest-" + fmt.Sprintf("%x", sha256.Sum256([]byte(c.TokenService+"\x00"+string(id))))[:16]
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

// send gives req to the filter as Envoy's connection manager would (in its default mode) and
// reports the outcome; when the request is forwarded and req.response is set, the upstream
// then answers with it, and the outcome holds what the client receives.
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
	var released host.Headers
	eos := false
	step := func(r host.Result, err error) (bool, error) {
		if r.Headers != nil {
			released = r.Headers
		}
		if r.EndOfStream {
			eos = true
		}
		if r.Reply != nil {
			out.Status, out.Body = r.Reply.Status, string(r.Reply.Body)
			out.ReplyHeaders = pairs(r.Reply.Headers)
			return true, nil
		}
		return false, err
	}
	stepCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	trailers := len(req.trailers) > 0
	done, err := step(st.SendRequestHeaders(stepCtx, hdrs, len(req.chunks) == 0 && !trailers))
	for i := 0; !done && err == nil && i < len(req.chunks); i++ {
		done, err = step(st.SendRequestBody(stepCtx, []byte(req.chunks[i]), i == len(req.chunks)-1 && !trailers))
	}
	if !done && err == nil && trailers {
		var ts host.Headers
		for _, kv := range req.trailers {
			ts = append(ts, host.Header{Name: kv[0], Value: kv[1]})
		}
		done, err = step(st.SendRequestTrailers(stepCtx, ts))
	}
	switch {
	case done:
		return out, nil
	case err != nil:
		out.Stuck = true
		return out, nil
	}
	out.Forwarded = released != nil && eos
	out.Stuck = !out.Forwarded
	if !out.Forwarded {
		return out, nil
	}
	out.Upstream = pairs(released)
	if req.response == nil {
		return out, nil
	}
	status := req.response.Status
	if status == 0 {
		status = http.StatusOK
	}
	hs := host.Headers{{Name: ":status", Value: strconv.Itoa(status)}}
	for _, kv := range req.response.Headers {
		hs = append(hs, host.Header{Name: kv[0], Value: kv[1]})
	}
	chunks := req.response.Body
	r, err := st.SendResponseHeaders(stepCtx, hs, len(chunks) == 0)
	if err != nil {
		return out, fmt.Errorf("upstream response: %w", err)
	}
	got := r.Headers
	if r.Reply != nil {
		got = append(host.Headers{{Name: ":status", Value: strconv.Itoa(r.Reply.Status)}}, r.Reply.Headers...)
	}
	out.Response = pairs(got)
	if out.Response == nil {
		out.Response = [][2]string{}
	}
	body := r.Body
	for i, ch := range chunks {
		r, err := st.SendResponseBody(stepCtx, []byte(ch), i == len(chunks)-1)
		if err != nil {
			return out, fmt.Errorf("upstream response body: %w", err)
		}
		body = append(body, r.Body...)
	}
	out.ResponseBody = string(body)
	return out, nil
}

func pairs(hs host.Headers) [][2]string {
	var ps [][2]string
	for _, h := range hs {
		ps = append(ps, [2]string{h.Name, h.Value})
	}
	return ps
}

// checkServer is the token service's check API for the requests of one case: it answers
// every check call with Tester.CheckAnswer, or else with the identity (or the token service
// status) of the case whose credential the call carries, or else of the case being played,
// in the check API's wire types.
type checkServer struct {
	key        string
	routes     []pluginconf.Route
	sessionKey func(sub, routeID string) string
	hook       func(Case, checkapi.Request) (int, []byte, bool)
	calls      atomic.Int64

	mu      sync.Mutex
	current Case
	creds   map[string]Case // credential sent → the case that sent it
}

// play makes c the case being played and records the credential it sends.
func (s *checkServer) play(c Case) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = c
	if c.Identity != nil || (c.TokenService != "" && c.TokenService != "ok") {
		s.creds[c.credential()] = c
	}
}

func (s *checkServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	status, b, fail := s.reply(r.Header.Get(checkapi.KeyHeader), body)
	if fail {
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// reply is the HTTP answer to a check call; fail means no answer at all.
func (s *checkServer) reply(key string, body []byte) (int, []byte, bool) {
	var req checkapi.Request
	decoded := key == s.key && json.Unmarshal(body, &req) == nil
	s.mu.Lock()
	cur := s.current
	c := cur
	if decoded {
		if sent, ok := s.creds[req.Token]; ok && req.Token != "" {
			c = sent
		} else if sent, ok := s.creds[req.Cookie]; ok && req.Cookie != "" {
			c = sent
		}
	}
	s.mu.Unlock()
	if decoded && s.hook != nil {
		if status, b, ok := s.hook(cur, req); ok {
			return status, b, status == 0
		}
	}
	resp, fail := s.answer(c, key, body)
	b, _ := json.Marshal(resp)
	status := checkapi.HTTPStatus(resp.Status)
	if status == 0 {
		status = http.StatusUnauthorized
	}
	return status, b, fail
}

// answer is the check API's answer to a check call for case c; fail means no answer at all.
func (s *checkServer) answer(c Case, key string, body []byte) (checkapi.Response, bool) {
	if key != s.key {
		return checkapi.Response{Status: "invalid_key", Error: "the filter key is wrong"}, false
	}
	var req checkapi.Request
	if err := json.Unmarshal(body, &req); err != nil {
		return checkapi.Response{Status: "bad_request"}, false
	}
	status := c.TokenService
	if status == "" {
		status = checkapi.StatusOK
		if c.Identity == nil {
			status = checkapi.StatusInvalidToken
		}
	}
	switch status {
	case TokenServiceUnavailable:
		return checkapi.Response{}, true
	case checkapi.StatusInvalidToken, checkapi.StatusNoSession:
		return checkapi.Response{Status: status, Error: status}, false
	}
	id := c.Identity.wire()
	if status == checkapi.StatusUpstreamRequired {
		return checkapi.Response{Status: status, Identity: id, Error: "invalid_token"}, false
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
