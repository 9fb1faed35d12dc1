package plugintest

import "github.com/mcpmesh/gateway/filter/plugin"

// Held is a request whose check call the fake token service has not answered yet (a slow or
// flooded token service), for the tests of the filter's bounds.
type Held struct {
	s  *nativeStream
	st plugin.Stream
}

// Hold sends req's headers through nf and leaves any check call it makes unanswered.
func (nf *NativeFilter) Hold(req Request) *Held {
	s := &nativeStream{NativeHost: nf.Host}
	s.headers = []plugin.Header{{Name: ":method", Value: req.Method}, {Name: ":path", Value: req.Path}, {Name: ":authority", Value: req.Authority}, {Name: ":scheme", Value: "https"}}
	for _, h := range req.Headers {
		s.headers = append(s.headers, plugin.Header{Name: h[0], Value: h[1]})
	}
	st := nf.Filter.NewStream(s)
	st.OnRequestHeaders(len(s.headers), false)
	return &Held{s: s, st: st}
}

// Calls is how many check calls the request made.
func (h *Held) Calls() int { return h.s.nCalls }

// Status is the status of the filter's local reply, 0 if none.
func (h *Held) Status() int {
	if h.s.reply == nil {
		return 0
	}
	return h.s.reply.Status
}

// Release answers the request's check calls as AnswerCheck does and ends the stream.
func (h *Held) Release() {
	h.s.deliver(AnswerCheck)
	h.st.OnDone()
}

// WithBearer is req with its Authorization header replaced by a bearer token.
func WithBearer(req Request, token string) Request {
	out := req
	out.Headers = nil
	for _, h := range req.Headers {
		if h[0] != "authorization" {
			out.Headers = append(out.Headers, h)
		}
	}
	out.Headers = append(out.Headers, bearer(token))
	return out
}
