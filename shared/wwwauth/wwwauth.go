// Package wwwauth reads the Bearer challenge of a WWW-Authenticate header (RFC 9110 §11.6.1,
// RFC 6750 §3, RFC 9728 §5.1): what an upstream MCP server asks of its clients. The token
// service's discovery reads its resource_metadata and scope; the filter reads an
// insufficient_scope challenge to pass a step-up on to the MCP client. It is bounded, never
// panics (fuzzed) and compiles for wasip1.
package wwwauth

import "strings"

// maxChallengeLen bounds the WWW-Authenticate value parsed.
const maxChallengeLen = 8 << 10

// Challenge is what a Bearer challenge of an upstream asks of its clients.
type Challenge struct {
	ResourceMetadata string // resource_metadata: the protected-resource metadata URL
	Scope            string // scope: the scopes the request needs
	Error            string // error: invalid_token, insufficient_scope, …
}

// Parse reads the Bearer challenge among the challenges of a WWW-Authenticate value
// (RFC 9110 §11.6.1: scheme, then comma-separated auth-params whose values are tokens or
// quoted strings). ok is false when there is no Bearer challenge or the value is malformed.
func Parse(v string) (c Challenge, ok bool) {
	if len(v) > maxChallengeLen {
		return Challenge{}, false
	}
	p := challengeParser{s: v}
	for {
		p.skip(" \t,")
		if p.done() {
			return c, ok
		}
		scheme := p.token()
		if scheme == "" {
			return Challenge{}, false
		}
		bearer := strings.EqualFold(scheme, "Bearer")
		if bearer && ok {
			return Challenge{}, false // two Bearer challenges: which one counts is unclear
		}
		ok = ok || bearer
		// auth-params until the next scheme (a token not followed by "=") or the end.
		for {
			p.skip(" \t")
			save := p.i
			if p.done() {
				break
			}
			if p.s[p.i] == ',' {
				p.i++
				continue
			}
			name := p.token()
			p.skip(" \t")
			if name == "" || p.done() || p.s[p.i] != '=' {
				p.i = save // a token68 or the next challenge's scheme
				if name == "" || !p.nextIsScheme() {
					return Challenge{}, false
				}
				break
			}
			p.i++
			p.skip(" \t")
			val, good := p.value()
			if !good {
				return Challenge{}, false
			}
			if !bearer {
				continue
			}
			switch strings.ToLower(name) {
			case "resource_metadata":
				c.ResourceMetadata = val
			case "scope":
				c.Scope = val
			case "error":
				c.Error = val
			}
		}
	}
}

type challengeParser struct {
	s string
	i int
}

func (p *challengeParser) done() bool { return p.i >= len(p.s) }

func (p *challengeParser) skip(set string) {
	for p.i < len(p.s) && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

// token reads an RFC 9110 token.
func (p *challengeParser) token() string {
	start := p.i
	for p.i < len(p.s) && isTchar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// nextIsScheme reports whether a new challenge starts at p.i: a token followed by space and
// an auth-param, a token68, or the end.
func (p *challengeParser) nextIsScheme() bool {
	q := challengeParser{s: p.s, i: p.i}
	if q.token() == "" {
		return false
	}
	return q.done() || q.s[q.i] == ' ' || q.s[q.i] == '\t' || q.s[q.i] == ','
}

// value reads a token or a quoted-string (with quoted-pairs) of printable ASCII.
func (p *challengeParser) value() (string, bool) {
	if p.done() {
		return "", false
	}
	if p.s[p.i] != '"' {
		v := p.token()
		return v, v != ""
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), true
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", false
			}
			c = p.s[p.i+1]
			p.i++
		}
		if (c < 0x20 && c != '\t') || c >= 0x7f {
			return "", false
		}
		b.WriteByte(c)
		p.i++
	}
	return "", false
}

func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
