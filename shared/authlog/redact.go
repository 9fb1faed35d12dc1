package authlog

import (
	"errors"
	"strconv"
	"strings"

	"github.com/mcpmesh/gateway/shared/ascii"
	"github.com/mcpmesh/gateway/shared/jsontext"
)

// Redaction and size cap of mcp-tool-parameters. Tool arguments may carry secrets (a
// password, an API key) and may be large; the record is built with the values of sensitive
// keys replaced and the whole value cut to a bound.

// Redacted replaces the value of a redacted key in mcp-tool-parameters.
const Redacted = `"[redacted]"`

// DefaultMaxParameterBytes bounds mcp-tool-parameters as written (compacted and redacted)
// when `authorize_log_max_parameter_bytes` is not set.
const DefaultMaxParameterBytes = 4096

// TruncatedKey is the member of the object that replaces mcp-tool-parameters over the
// bound: {"[truncated]":true,"bytes":N}, N the size of the arguments as the request held them.
const TruncatedKey = "[truncated]"

// DefaultRedact returns the keys redacted when `authorize_log_redact` is not set.
func DefaultRedact() []string {
	return []string{"password", "passwd", "secret", "token", "access_token", "refresh_token",
		"api_key", "apikey", "authorization", "cookie", "client_secret", "private_key"}
}

// maxRedactPaths bounds the JSON paths of a redaction list (each costs a little on every key).
const maxRedactPaths = 32

// ErrBadRedaction reports an entry of `authorize_log_redact` that is empty or a malformed
// path.
var ErrBadRedaction = errors.New("invalid redaction entry")

// Options configure how a [Writer] writes mcp-tool-parameters.
type Options struct {
	// Redact lists what is redacted: a key ("password") is matched ASCII case-insensitively
	// at any depth, objects inside arrays included; a path ("$.credentials.key") names a
	// member from the arguments' root through objects only, each segment matched ASCII
	// case-insensitively. The value, whatever it is (a string, a number, an object), is
	// replaced with "[redacted]". nil means [DefaultRedact]; an empty, non-nil list
	// redacts nothing.
	Redact []string
	// MaxParameterBytes bounds mcp-tool-parameters as written: a larger value is replaced
	// with {"[truncated]":true,"bytes":N}. 0 means [DefaultMaxParameterBytes]; negative,
	// no bound.
	MaxParameterBytes int
}

// ParseRedact validates the value of `authorize_log_redact`: every entry is a non-empty key
// or a path "$.a.b" of non-empty segments (at most 32 paths). The error names the entry.
func ParseRedact(entries []string) error {
	paths := 0
	for i, e := range entries {
		bad := e == ""
		if strings.HasPrefix(e, "$") {
			paths++
			rest, ok := strings.CutPrefix(e, "$.")
			bad = !ok || paths > maxRedactPaths
			for _, seg := range strings.Split(rest, ".") {
				bad = bad || seg == ""
			}
		}
		if bad {
			return errors.New("authorize_log_redact[" + strconv.Itoa(i) + "]: " + ErrBadRedaction.Error() + " " + strconv.Quote(e) +
				` (a key, or a path "$.a.b"; at most ` + strconv.Itoa(maxRedactPaths) + " paths)")
		}
	}
	return nil
}

// redactor is the compiled redaction of a Writer. It is not safe for concurrent use: the
// path state is scratch space.
type redactor struct {
	keys []string // lower-case keys, matched at any depth
	// keyLens has bit min(len(k), 63) set for each k in keys: most member names match no
	// key's length and are compared with none (a call each in the wasm filter).
	keyLens uint64
	paths   [][]string // lower-case segments of paths from the root object
	// matched[p] is how many leading segments of paths[p] the chain of open objects matches.
	matched []int
	max     int // the bound on the written parameters; <= 0: none
}

// newRedactor compiles o (entries that ParseRedact refuses are skipped).
func newRedactor(o Options) *redactor {
	list := o.Redact
	if list == nil {
		list = DefaultRedact()
	}
	r := &redactor{max: o.MaxParameterBytes}
	if r.max == 0 {
		r.max = DefaultMaxParameterBytes
	}
	for _, e := range list {
		if e == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(e, "$."); ok {
			segs := strings.Split(strings.ToLower(rest), ".")
			if len(r.paths) < maxRedactPaths && !containsEmpty(segs) {
				r.paths = append(r.paths, segs)
			}
			continue
		}
		if !strings.HasPrefix(e, "$") {
			r.keys = append(r.keys, strings.ToLower(e))
			r.keyLens |= lenBit(len(e))
		}
	}
	r.matched = make([]int, len(r.paths))
	return r
}

func containsEmpty(segs []string) bool {
	for _, s := range segs {
		if s == "" {
			return true
		}
	}
	return false
}

// lenBit is the bit of keyLens for a key of n bytes.
func lenBit(n int) uint64 { return 1 << min(n, 63) }

// reset prepares the path state for a new object.
func (r *redactor) reset() {
	for i := range r.matched {
		r.matched[i] = 0
	}
}

// closed notes that a container closed, leaving depth containers open.
func (r *redactor) closed(depth int) {
	for i, m := range r.matched {
		if m > depth {
			r.matched[i] = depth
		}
	}
}

// key reports whether the value of the member named by the raw (still escaped) string
// content key, in the object at depth (1 for the root), is redacted, and updates the path
// state.
func (r *redactor) key(raw string, depth int) bool {
	if len(r.keys) == 0 && len(r.paths) == 0 {
		return false
	}
	k := raw
	if strings.IndexByte(raw, '\\') >= 0 {
		k = jsontext.Unescape(raw) // rare: unescape, so that "p\u0061ssword" is a password
	}
	hit := false
	if r.keyLens&lenBit(len(k)) != 0 {
		for _, want := range r.keys {
			if ascii.EqualFold(k, want) {
				hit = true
				break
			}
		}
	}
	for i, segs := range r.paths {
		m := r.matched[i]
		if m > depth-1 {
			m = depth - 1 // a sibling of the key that matched before
		}
		if m == depth-1 && depth-1 < len(segs) && ascii.EqualFold(k, segs[depth-1]) {
			m = depth
			if depth == len(segs) {
				hit = true
			}
		}
		r.matched[i] = m
	}
	return hit
}

// skipValue returns the index just past the JSON value that starts at s[i], or -1 when it
// does not end (brackets are counted whatever their kind, strings skipped whole: what is
// skipped is never written, so it cannot break the record).
func skipValue(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		end := stringEnd(s, i+1)
		if end == len(s) {
			return -1
		}
		return end + 1
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				end := stringEnd(s, i+1)
				if end == len(s) {
					return -1
				}
				i = end
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	for i < len(s) {
		switch s[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// appendParameters appends the tool parameters raw as the record's value: compacted,
// redacted by r, and replaced with the truncation marker when longer than r's bound.
func appendParameters(dst []byte, raw string, validated bool, r *redactor) []byte {
	start := len(dst)
	if validated {
		dst = appendValidatedObject(dst, raw, r)
	} else {
		dst = appendObject(dst, raw, r)
	}
	if r.max > 0 && len(dst)-start > r.max && string(dst[start:]) != "null" {
		dst = append(dst[:start], `{"`+TruncatedKey+`":true,"bytes":`...)
		dst = strconv.AppendInt(dst, int64(len(raw)), 10)
		dst = append(dst, '}')
	}
	return dst
}
