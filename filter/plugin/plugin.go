package plugin

// Filter is the plugin's root: it holds the parsed configuration and per-VM state.
type Filter struct {
	host RootHost
}

// New returns a Filter that reports through host.
func New(host RootHost) *Filter { return &Filter{host: host} }

// Configure parses the plugin configuration (the JSON subset of the gateway config).
func (f *Filter) Configure(config []byte) error { return nil }

// NewStream returns the handler of one HTTP stream.
func (f *Filter) NewStream(h StreamHost) Stream { return &passStream{h: h} }

// passStream lets a request through and logs it. Placeholder until the policy path lands.
type passStream struct{ h StreamHost }

func (s *passStream) OnRequestHeaders(int, bool) Action {
	p, _ := s.h.RequestHeader(":path")
	s.h.Log(LogInfo, "pass "+p)
	return Continue
}
func (s *passStream) OnRequestBody(int, bool) Action     { return Continue }
func (s *passStream) OnResponseHeaders(int, bool) Action { return Continue }
func (s *passStream) OnResponseBody(int, bool) Action    { return Continue }
func (s *passStream) OnDone()                            {}
