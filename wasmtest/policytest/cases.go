package policytest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Case is one request played through the filter and what must come of it.
type Case struct {
	// Name identifies the case in the report.
	Name string
	// Line is the line of the case in its cases file (0 for cases built in Go).
	Line int
	// Identity is who the token service vouches for. Nil sends no credential at all.
	Identity *Identity
	// TokenService is the token service's answer to the filter's check call: StatusOK (the
	// default, with Identity), "invalid_token", "no_session", "upstream_required", or
	// TokenServiceUnavailable (no answer).
	TokenService string
	// Route names the route by its `name` or its `from` URL; URL, when set, is the request
	// URL instead (any path and query). One of the two is required. Path is appended to the
	// route's from URL.
	Route string
	URL   string
	Path  string
	// HTTPMethod defaults to POST when the request has a body and GET otherwise.
	HTTPMethod string
	// Headers are sent as given, after the defaults (Content-Type and Accept for a POST, the
	// credential) they replace by name. A case that sets Authorization or Cookie sends no
	// credential of its own; the token service still answers as TokenService and Identity say.
	Headers [][2]string
	// Message is one JSON-RPC message, Batch several (a JSON array); Body is a raw body
	// instead. Chunks, for Go callers, is a raw body as it arrives in pieces.
	Message *Message
	Batch   []Message
	Body    *string
	Chunks  []string
	// PadBodyTo pads the body with trailing spaces to this many bytes (an oversize body).
	PadBodyTo int
	// NoContentLength sends the body without Content-Length (a chunked upload).
	NoContentLength bool
	// Authority and RawPath, for Go callers, are the request's :authority and :path exactly
	// as sent (with Route and URL empty), on the https scheme.
	Authority, RawPath string
	// NoDefaultHeaders sends Headers alone: no Content-Type, Accept or credential is added.
	NoDefaultHeaders bool
	// Trailers, when set, end the request with trailers (lower-case names): no body chunk
	// carries the end of the stream, as with an HTTP/2 client.
	Trailers [][2]string
	// Before are requests sent first, in order, on the same filter VM (the same decision
	// cache and MCP session bindings), each with its own identity; their check calls are
	// answered as the case's are. A Before case needs no Name, and its Expect is checked
	// only when set; it has no Before cases of its own. SessionPlaceholder in this case's
	// header values and path stands for the MCP session the client received last in their
	// answers (see UpstreamResponse).
	Before []Case
	// UpstreamResponse, when set, is the upstream's answer to the request if the filter
	// forwards it; the outcome then holds what the client receives of it.
	UpstreamResponse *Response
	// Expect is what must come of the request.
	Expect Expect
}

// Response is an upstream's answer to a forwarded request.
type Response struct {
	// Status is the HTTP status; 200 when 0.
	Status int
	// Headers are the response headers (lower-case names), such as mcp-session-id.
	Headers [][2]string
	// Body is the response body as it arrives, in chunks (an event stream in several).
	Body []string
}

// Identity is the user a case's credential belongs to.
type Identity struct {
	// Subject is the user's ID (the `user` criterion); the email when not given.
	Subject string
	Email   string
	Name    string
	Groups  []string
	// Claims are the identity's other claims (the `claim/<name>` criterion).
	Claims map[string][]string
}

// Message is a JSON-RPC message of a case.
type Message struct {
	// Method is the JSON-RPC method (tools/call, tools/list, initialize, notifications/…).
	Method string
	// Tool and Arguments make the params of a tools/call; Params is raw JSON params instead.
	Tool      string
	Arguments map[string]any
	Params    json.RawMessage
	// ID is the JSON-RPC id; a number is chosen for requests when nil, and a notification
	// (a method under notifications/) has none.
	ID any
}

// Outcomes a case may expect.
const (
	Allow = "allow" // the request goes on to the upstream
	Deny  = "deny"  // the filter answers the request itself
)

// TokenServiceUnavailable is Case.TokenService for a token service that does not answer.
const TokenServiceUnavailable = "unavailable"

// Expect is a case's expected outcome.
type Expect struct {
	// Decision is Allow or Deny; "" when only Status is expected (which implies Deny).
	Decision string
	// Status is the status of the filter's own answer (403, 401, 413, …); 0 for any.
	Status int
	// AllowWhyTrue, AllowWhyFalse and DenyWhyFalse are reasons that must appear in the
	// corresponding field of an authorization record of the request.
	AllowWhyTrue  []string
	AllowWhyFalse []string
	DenyWhyFalse  []string
	// Shadow is the decision the route's policy_shadow must come to (Allow or Deny: deny
	// when it would deny any message of the request); "" for any.
	Shadow string
}

// String renders the expectation as the report shows it.
func (e Expect) String() string {
	switch {
	case e.Decision == Allow:
		return Allow
	case e.Status != 0:
		return fmt.Sprintf("deny %d", e.Status)
	}
	return Deny
}

// FileError is a problem in a cases file, at a key path and line.
type FileError struct {
	File string
	Line int
	Key  string
	Msg  string
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// FileErrors lists every problem found in a cases file.
type FileErrors []*FileError

func (es FileErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// LoadCases reads and parses a cases file (see ParseCases).
func LoadCases(path string) ([]Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cases: %w", err)
	}
	return ParseCases(path, data)
}

// ParseCases parses a cases file, named file in errors. Parsing is strict: an unknown key, a
// value of the wrong type or a contradiction is an error naming the key path and the line
// (FileErrors).
func ParseCases(file string, data []byte) ([]Case, error) {
	var root yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, FileErrors{{File: file, Msg: "empty file: want a mapping with the key cases"}}
		}
		line := 0
		if _, after, ok := strings.Cut(err.Error(), "line "); ok {
			n, _, _ := strings.Cut(after, ":")
			line, _ = strconv.Atoi(n)
		}
		return nil, FileErrors{{File: file, Line: line, Msg: "not valid YAML: " + err.Error()}}
	}
	p := &parser{file: file}
	doc := root.Content[0]
	var cases []Case
	p.mapping(doc, "", map[string]func(*yaml.Node, string){
		"cases": func(n *yaml.Node, path string) {
			if !p.kind(n, path, yaml.SequenceNode, "a list of cases") {
				return
			}
			for i, el := range n.Content {
				cases = append(cases, p.parseCase(el, fmt.Sprintf("cases[%d]", i), false))
			}
		},
	}, "cases")
	if len(p.errs) == 0 && len(cases) == 0 {
		p.fail(doc, "cases", "the list is empty")
	}
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return cases, nil
}

type parser struct {
	file string
	errs FileErrors
}

func (p *parser) fail(n *yaml.Node, key, format string, args ...any) {
	p.errs = append(p.errs, &FileError{File: p.file, Line: n.Line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (p *parser) kind(n *yaml.Node, path string, k yaml.Kind, want string) bool {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != k {
		p.fail(n, path, "want %s", want)
		return false
	}
	return true
}

// mapping walks a mapping node: each key must be one of fields, required keys must be there.
func (p *parser) mapping(n *yaml.Node, path string, fields map[string]func(*yaml.Node, string), required ...string) map[string]bool {
	seen := map[string]bool{}
	if !p.kind(n, path, yaml.MappingNode, "a mapping of keys") {
		return seen
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f, ok := fields[k.Value]
		switch {
		case !ok:
			p.fail(k, join(path, k.Value), "unknown key")
		case seen[k.Value]:
			p.fail(k, join(path, k.Value), "duplicate key")
		default:
			seen[k.Value] = true
			f(v, join(path, k.Value))
		}
	}
	for _, r := range required {
		if !seen[r] {
			p.fail(n, join(path, r), "required")
		}
	}
	return seen
}

func (p *parser) str(dst *string) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if p.kind(n, path, yaml.ScalarNode, "a string") {
			*dst = n.Value
		}
	}
}

func (p *parser) strs(dst *[]string) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if !p.kind(n, path, yaml.SequenceNode, "a list of strings") {
			return
		}
		for i, el := range n.Content {
			if p.kind(el, fmt.Sprintf("%s[%d]", path, i), yaml.ScalarNode, "a string") {
				*dst = append(*dst, el.Value)
			}
		}
	}
}

func (p *parser) integer(dst *int, min int) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if !p.kind(n, path, yaml.ScalarNode, "an integer") {
			return
		}
		v, err := strconv.Atoi(n.Value)
		if err != nil || v < min {
			p.fail(n, path, "want an integer of at least %d, got %q", min, n.Value)
			return
		}
		*dst = v
	}
}

// headers parses a mapping of header names (lower-cased) to values.
func (p *parser) headers(dst *[][2]string) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if !p.kind(n, path, yaml.MappingNode, "a mapping of header names to values") {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if p.kind(v, join(path, k.Value), yaml.ScalarNode, "a string") {
				*dst = append(*dst, [2]string{strings.ToLower(k.Value), v.Value})
			}
		}
	}
}

// parseCase parses a case, or with before an entry of a case's before list (no name or
// expect required, no before of its own).
func (p *parser) parseCase(n *yaml.Node, path string, before bool) Case {
	c := Case{Line: n.Line}
	var body string
	hasBody := false
	required := []string{"name", "expect"}
	if before {
		required = nil
	}
	fields := map[string]func(*yaml.Node, string){
		"name": p.str(&c.Name),
		"identity": func(n *yaml.Node, path string) {
			c.Identity = p.parseIdentity(n, path)
		},
		"token_service": func(n *yaml.Node, path string) {
			p.str(&c.TokenService)(n, path)
			switch c.TokenService {
			case "ok", "invalid_token", "no_session", "upstream_required", TokenServiceUnavailable:
			default:
				p.fail(n, path, "want ok, invalid_token, no_session, upstream_required or unavailable, got %q", n.Value)
			}
		},
		"route":       p.str(&c.Route),
		"url":         p.str(&c.URL),
		"path":        p.str(&c.Path),
		"http_method": p.str(&c.HTTPMethod),
		"headers":     p.headers(&c.Headers),
		"trailers": func(n *yaml.Node, path string) {
			p.headers(&c.Trailers)(n, path)
			if n.Kind == yaml.MappingNode && len(n.Content) == 0 {
				p.fail(n, path, "the mapping is empty")
			}
		},
		"upstream_response": func(n *yaml.Node, path string) {
			c.UpstreamResponse = p.parseResponse(n, path)
		},
		"mcp": func(n *yaml.Node, path string) {
			m := p.parseMessage(n, path)
			c.Message = &m
		},
		"batch": func(n *yaml.Node, path string) {
			if !p.kind(n, path, yaml.SequenceNode, "a list of MCP messages") {
				return
			}
			if len(n.Content) == 0 {
				p.fail(n, path, "the list is empty")
			}
			for i, el := range n.Content {
				c.Batch = append(c.Batch, p.parseMessage(el, fmt.Sprintf("%s[%d]", path, i)))
			}
		},
		"body": func(n *yaml.Node, path string) {
			hasBody = true
			p.str(&body)(n, path)
		},
		"pad_body_to": p.integer(&c.PadBodyTo, 1),
		"expect": func(n *yaml.Node, path string) {
			c.Expect = p.parseExpect(n, path)
		},
	}
	if !before {
		fields["before"] = func(n *yaml.Node, path string) {
			if !p.kind(n, path, yaml.SequenceNode, "a list of requests") {
				return
			}
			if len(n.Content) == 0 {
				p.fail(n, path, "the list is empty")
			}
			for i, el := range n.Content {
				c.Before = append(c.Before, p.parseCase(el, fmt.Sprintf("%s[%d]", path, i), true))
			}
		}
	}
	if before {
		fields["before"] = func(n *yaml.Node, path string) {
			p.fail(n, path, "a before request has no before requests of its own")
		}
	}
	seen := p.mapping(n, path, fields, required...)
	if hasBody {
		c.Body = &body
	}
	if n.Kind != yaml.MappingNode {
		return c
	}
	if seen["route"] == seen["url"] {
		p.fail(n, path, "set exactly one of route and url")
	}
	if seen["url"] && seen["path"] {
		p.fail(n, path, "path goes with route, not with url")
	}
	if btoi(seen["mcp"])+btoi(seen["batch"])+btoi(seen["body"]) > 1 {
		p.fail(n, path, "set at most one of mcp, batch and body")
	}
	if seen["token_service"] && c.TokenService != "ok" && c.TokenService != "upstream_required" && seen["identity"] {
		p.fail(n, join(path, "identity"), "a token service answering %s vouches for nobody: remove identity", c.TokenService)
	}
	return c
}

// parseResponse parses an upstream response: status, headers and body.
func (p *parser) parseResponse(n *yaml.Node, path string) *Response {
	r := &Response{}
	p.mapping(n, path, map[string]func(*yaml.Node, string){
		"status":  p.integer(&r.Status, 100),
		"headers": p.headers(&r.Headers),
		"body": func(n *yaml.Node, path string) {
			var b string
			p.str(&b)(n, path)
			r.Body = []string{b}
		},
	})
	return r
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (p *parser) parseIdentity(n *yaml.Node, path string) *Identity {
	id := &Identity{}
	p.mapping(n, path, map[string]func(*yaml.Node, string){
		"email":  p.str(&id.Email),
		"sub":    p.str(&id.Subject),
		"name":   p.str(&id.Name),
		"groups": p.strs(&id.Groups),
		"claims": func(n *yaml.Node, path string) {
			if !p.kind(n, path, yaml.MappingNode, "a mapping of claim names to a value or a list of values") {
				return
			}
			id.Claims = map[string][]string{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				kp := join(path, k.Value)
				switch v.Kind {
				case yaml.ScalarNode:
					id.Claims[k.Value] = []string{v.Value}
				case yaml.SequenceNode:
					var vs []string
					p.strs(&vs)(v, kp)
					id.Claims[k.Value] = vs
				default:
					p.fail(v, kp, "want a value or a list of values")
				}
			}
		},
	})
	if id.Email == "" && id.Subject == "" && n.Kind == yaml.MappingNode {
		p.fail(n, path, "set email or sub")
	}
	return id
}

func (p *parser) parseMessage(n *yaml.Node, path string) Message {
	var m Message
	var params *yaml.Node
	p.mapping(n, path, map[string]func(*yaml.Node, string){
		"method": p.str(&m.Method),
		"tool":   p.str(&m.Tool),
		"arguments": func(n *yaml.Node, path string) {
			if p.kind(n, path, yaml.MappingNode, "a mapping (the tool's arguments)") {
				if err := n.Decode(&m.Arguments); err != nil {
					p.fail(n, path, "%v", err)
				}
			}
		},
		"params": func(n *yaml.Node, path string) { params = n },
		"id": func(n *yaml.Node, path string) {
			if !p.kind(n, path, yaml.ScalarNode, "a number or a string") {
				return
			}
			if v, err := strconv.ParseInt(n.Value, 10, 64); err == nil && n.Tag == "!!int" {
				m.ID = v
			} else {
				m.ID = n.Value
			}
		},
	})
	if n.Kind != yaml.MappingNode {
		return m
	}
	if m.Method == "" {
		if m.Tool == "" {
			p.fail(n, join(path, "method"), "required (or tool, for tools/call)")
		}
		m.Method = "tools/call"
	}
	if (m.Tool != "" || m.Arguments != nil) && m.Method != "tools/call" {
		p.fail(n, path, "tool and arguments go with method tools/call, not %s", m.Method)
	}
	if params != nil {
		if m.Tool != "" || m.Arguments != nil {
			p.fail(params, join(path, "params"), "set params or tool and arguments, not both")
		}
		var v any
		if err := params.Decode(&v); err != nil {
			p.fail(params, join(path, "params"), "%v", err)
		} else if b, err := json.Marshal(jsonValue(v)); err != nil {
			p.fail(params, join(path, "params"), "%v", err)
		} else {
			m.Params = b
		}
	}
	return m
}

func (p *parser) parseExpect(n *yaml.Node, path string) Expect {
	var e Expect
	decision := func(n *yaml.Node, path string) {
		p.str(&e.Decision)(n, path)
		if e.Decision != Allow && e.Decision != Deny {
			p.fail(n, path, "want allow or deny, got %q", n.Value)
		}
	}
	if n.Kind == yaml.ScalarNode {
		decision(n, path)
		return e
	}
	p.mapping(n, path, map[string]func(*yaml.Node, string){
		"decision":        decision,
		"status":          p.integer(&e.Status, 100),
		"allow-why-true":  p.strs(&e.AllowWhyTrue),
		"allow-why-false": p.strs(&e.AllowWhyFalse),
		"deny-why-false":  p.strs(&e.DenyWhyFalse),
		"shadow": func(n *yaml.Node, path string) {
			p.str(&e.Shadow)(n, path)
			if e.Shadow != Allow && e.Shadow != Deny {
				p.fail(n, path, "want allow or deny, got %q", n.Value)
			}
		},
	})
	if n.Kind != yaml.MappingNode {
		return e
	}
	switch {
	case e.Decision == "" && e.Status == 0:
		p.fail(n, path, "set decision (allow or deny) or status")
	case e.Decision == Allow && e.Status != 0:
		p.fail(n, join(path, "status"), "an allowed request gets no answer from the filter: status goes with deny")
	}
	if e.Decision == "" {
		e.Decision = Deny
	}
	return e
}

// jsonValue converts YAML-decoded values to values encoding/json can encode.
func jsonValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = jsonValue(e)
		}
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[fmt.Sprint(k)] = jsonValue(e)
		}
		return out
	case []any:
		for i, e := range t {
			t[i] = jsonValue(e)
		}
	}
	return v
}
