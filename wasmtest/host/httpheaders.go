package host

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Conversions between net/http's header maps (canonical names, the values of each name
// together) and Envoy's (lower-case names, fields in order) for Handler. Every message crosses
// twice (the request into the filter and out to next, the response into the filter and out to
// the client), so the names common in MCP traffic come from a fixed table both ways instead of
// being lowered or canonicalized (an allocation each) field by field, and the values of a map
// share one backing array.

// hopByHop are the connection-specific headers Envoy's codecs drop.
var hopByHop = map[string]bool{"connection": true, "keep-alive": true, "proxy-connection": true,
	"transfer-encoding": true, "upgrade": true, "te": true, "host": true}

// commonHeaders are lower-case names whose canonical form headerNames holds.
var commonHeaders = []string{
	"accept", "accept-encoding", "accept-language", "authorization", "cache-control", "connection",
	"content-encoding", "content-length", "content-type", "cookie", "date", "etag", "expires",
	"keep-alive", "last-event-id", "last-modified", "location", "mcp-protocol-version",
	"mcp-session-id", "origin", "pragma", "referer", "server", "set-cookie", "te", "traceparent",
	"tracestate", "transfer-encoding", "upgrade", "user-agent", "vary", "www-authenticate",
	"x-content-type-options", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto",
	"x-gateway-assertion", "x-request-id",
}

// headerNames maps the canonical form of each common name to its lower-case form and back;
// the canonical forms are http.CanonicalHeaderKey's. Read only.
var headerNames = func() (t struct{ lower, canonical map[string]string }) {
	t.lower = make(map[string]string, len(commonHeaders))
	t.canonical = make(map[string]string, len(commonHeaders))
	for _, n := range commonHeaders {
		c := http.CanonicalHeaderKey(n)
		t.lower[c], t.canonical[n] = n, c
	}
	return t
}()

// lowerName is strings.ToLower(name).
func lowerName(name string) string {
	if l, ok := headerNames.lower[name]; ok {
		return l
	}
	return strings.ToLower(name)
}

// canonicalName is http.CanonicalHeaderKey(name).
func canonicalName(name string) string {
	if c, ok := headerNames.canonical[name]; ok {
		return c
	}
	return http.CanonicalHeaderKey(name)
}

// appendFields appends the fields of src to h with lower-case names, hop-by-hop headers
// dropped. room is the number of fields the caller will add after them.
func appendFields(h Headers, src http.Header, room int) Headers {
	n := 0
	for _, vals := range src {
		n += len(vals)
	}
	if cap(h)-len(h) < n+room {
		h = append(make(Headers, 0, len(h)+n+room), h...)
	}
	for name, vals := range src {
		lname := lowerName(name)
		if hopByHop[lname] {
			continue
		}
		for _, v := range vals {
			h = append(h, Header{lname, v})
		}
	}
	return h
}

// addFields adds the fields of h that skip does not refuse to dst under their canonical
// names, after the values dst already holds.
func addFields(dst http.Header, h Headers, skip func(name string) bool) {
	n := 0
	for _, f := range h {
		if !skip(f.Name) {
			n++
		}
	}
	vals := make([]string, 0, n) // one backing array; each name gets a full slice of it
	for _, f := range h {
		if skip(f.Name) {
			continue
		}
		k := canonicalName(f.Name)
		if old, ok := dst[k]; ok {
			dst[k] = append(old, f.Value)
			continue
		}
		vals = append(vals, f.Value)
		dst[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
}

// isPseudo reports a pseudo-header (":method", ":path", ...).
func isPseudo(name string) bool { return strings.HasPrefix(name, ":") }

// isStatus reports the :status pseudo-header.
func isStatus(name string) bool { return name == ":status" }

// requestHeaders converts r into Envoy's header map: pseudo-headers first, lower-case names,
// hop-by-hop headers dropped. There is room left for the x-request-id the stream adds.
func requestHeaders(r *http.Request) Headers {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	path := r.RequestURI
	if path == "" || !strings.HasPrefix(path, "/") {
		path = r.URL.RequestURI()
	}
	h := make(Headers, 0, 8)
	h = append(h, Header{":method", r.Method}, Header{":path", path}, Header{":authority", r.Host}, Header{":scheme", scheme})
	h = appendFields(h, r.Header, 2)
	if r.ContentLength > 0 && !h.Has("content-length") {
		h = append(h, Header{"content-length", strconv.FormatInt(r.ContentLength, 10)})
	}
	return h
}

// responseHeaders converts next's response header into Envoy's map: :status first.
func responseHeaders(code int, hdr http.Header) Headers {
	h := make(Headers, 1, 8)
	h[0] = Header{":status", statusString(code)}
	return appendFields(h, hdr, 0)
}

// statusString is strconv.Itoa(code), without an allocation for the usual codes.
func statusString(code int) string {
	switch code {
	case http.StatusOK:
		return "200"
	case http.StatusAccepted:
		return "202"
	case http.StatusNoContent:
		return "204"
	}
	return strconv.Itoa(code)
}

// upstreamRequest builds the request for next from the headers the filter released.
func upstreamRequest(ctx context.Context, in *http.Request, h Headers, body io.Reader) (*http.Request, error) {
	method, path, authority := h.Value(":method"), h.Value(":path"), h.Value(":authority")
	scheme := h.Value(":scheme")
	if scheme == "" {
		scheme = "http"
	}
	out, err := http.NewRequestWithContext(ctx, method, scheme+"://"+authority+path, body)
	if err != nil {
		return nil, err
	}
	out.RequestURI = path
	out.Host = authority
	out.RemoteAddr = in.RemoteAddr
	out.Proto, out.ProtoMajor, out.ProtoMinor = in.Proto, in.ProtoMajor, in.ProtoMinor
	out.TLS = in.TLS
	out.ContentLength = -1
	for _, f := range h {
		if f.Name == "content-length" {
			if n, err := strconv.ParseInt(f.Value, 10, 64); err == nil {
				out.ContentLength = n
			}
		}
	}
	if n := len(h) - 4; n > 8 { // beyond a small map's: sized once instead of grown
		out.Header = make(http.Header, n)
	}
	addFields(out.Header, h, isPseudo)
	if out.ContentLength == 0 {
		out.Body = http.NoBody
	}
	return out, nil
}
