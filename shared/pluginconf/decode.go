package pluginconf

import (
	"errors"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcpmesh/gateway/shared/jsontext"
)

// decode reads the plugin configuration b into c the way json.Unmarshal(b, c) does, without
// encoding/json, whose reflection-driven decoder (it links every encoder too) was most of
// what the configuration cost the wasm module. FuzzDecode_MatchesEncodingJSON compares the
// two; they agree on every text within jsontext.MaxDepth:
//
//   - a member name matches a field's exactly or, failing that, case-insensitively with
//     Unicode simple folding ("ID", "ſcheme"); unknown members are ignored;
//   - duplicated members are read in order into the same field: scalars and the policies
//     are replaced, while routes, tool_pins and digests are decoded into what the earlier
//     copy left (encoding/json's reuse of slices, pointers and maps);
//   - null leaves a string, number or boolean as it is and sets a list, map, pointer or
//     policy to nil;
//   - strings are decoded as encoding/json does (invalid UTF-8 and unpaired surrogates
//     become U+FFFD); policies become map[string]any, []any, string, float64, bool or nil;
//   - a value of the wrong type, an integer out of range or with a fraction or exponent, or
//     a policy number beyond float64 is an error worded as encoding/json's
//     *UnmarshalTypeError is, the first one met; decoding goes on after it, as there.
//
// Syntax errors are reported as "invalid JSON" (encoding/json names the character).
func decode(b []byte, c *Config) error {
	switch jsontext.Validate(b, jsontext.MaxDepth) {
	case jsontext.TooDeep:
		return errors.New("nested deeper than " + strconv.Itoa(jsontext.MaxDepth))
	case jsontext.Invalid:
		return errors.New("invalid JSON")
	}
	d := decoder{}
	v := jsontext.Parse(string(b))
	switch v.Kind() {
	case jsontext.Object:
		d.config(v, c)
	case jsontext.Null:
	default:
		d.fail(v, "pluginconf.Config", "", "")
	}
	return d.err
}

// decoder holds the first error met.
type decoder struct{ err error }

// fail records that v could not be stored in a Go value of type typ, the field path (JSON
// names joined by dots) of struct structName, like encoding/json's UnmarshalTypeError.
func (d *decoder) fail(v jsontext.Value, typ, structName, path string) {
	if d.err != nil {
		return
	}
	what := "bool"
	switch v.Kind() {
	case jsontext.Object:
		what = "object"
	case jsontext.Array:
		what = "array"
	case jsontext.String:
		what = "string"
	case jsontext.Number:
		what = "number"
	}
	d.failValue(what, typ, structName, path)
}

func (d *decoder) failValue(what, typ, structName, path string) {
	if d.err != nil {
		return
	}
	if structName == "" && path == "" {
		d.err = errors.New("json: cannot unmarshal " + what + " into Go value of type " + typ)
		return
	}
	d.err = errors.New("json: cannot unmarshal " + what + " into Go struct field " + structName + "." + path + " of type " + typ)
}

// fields yields the members of object v with the index of the field each one names in
// names (-1 for none), matched as encoding/json matches them.
func fields(v jsontext.Value, names []string, yield func(i int, val jsontext.Value)) {
	for k, val := range v.Members() {
		key := decodeString(k.Raw())
		i := slices.Index(names, key)
		if i < 0 {
			folded := foldName(key)
			i = slices.IndexFunc(names, func(n string) bool { return foldName(n) == folded })
		}
		yield(i, val)
	}
}

var configFields = []string{"token_service_cluster", "token_service_authority", "filter_key", "check_timeout_ms",
	"cache_ttl_s", "authenticate_service_url", "authorize_log_fields", "authorize_log_redact",
	"authorize_log_max_parameter_bytes", "routes"}

func (d *decoder) config(v jsontext.Value, c *Config) {
	const s = "Config"
	fields(v, configFields, func(i int, val jsontext.Value) {
		if i < 0 {
			return
		}
		path := configFields[i]
		switch i {
		case 0:
			d.string(val, &c.Cluster, s, path)
		case 1:
			d.string(val, &c.Authority, s, path)
		case 2:
			d.string(val, &c.FilterKey, s, path)
		case 3:
			if n, ok := d.uint(val, 32, "uint32", s, path); ok {
				c.CheckTimeoutMillis = uint32(n)
			}
		case 4:
			d.int(val, &c.CacheTTLSeconds, "int64", s, path)
		case 5:
			d.string(val, &c.AuthenticateServiceURL, s, path)
		case 6:
			d.strings(val, &c.AuthorizeLogFields, s, path)
		case 7:
			d.strings(val, &c.AuthorizeLogRedact, s, path)
		case 8:
			var n int64 = int64(c.AuthorizeLogMaxParameterBytes)
			d.int(val, &n, "int", s, path)
			c.AuthorizeLogMaxParameterBytes = int(n)
		case 9:
			d.routes(val, &c.Routes)
		}
	})
}

var routeFields = []string{"id", "name", "scheme", "host", "path_prefix", "kind", "max_request_bytes",
	"upstream_oauth2", "policy", "no_tool_list_filter", "policy_shadow", "tool_pins"}

func (d *decoder) routes(v jsontext.Value, rs *[]Route) {
	const s, path = "Config", "routes"
	switch v.Kind() {
	case jsontext.Null:
		*rs = nil
		return
	case jsontext.Array:
	default:
		d.fail(v, "[]pluginconf.Route", s, path)
		return
	}
	list := *rs
	i := 0
	for e := range v.Elements() {
		list = growTo(list, i)
		switch e.Kind() {
		case jsontext.Object:
			d.route(e, &list[i])
		case jsontext.Null:
		default:
			d.fail(e, "pluginconf.Route", s, path)
		}
		i++
	}
	*rs = shrinkTo(list, i)
}

func (d *decoder) route(v jsontext.Value, r *Route) {
	const s = "Route"
	fields(v, routeFields, func(i int, val jsontext.Value) {
		if i < 0 {
			return
		}
		path := "routes." + routeFields[i]
		switch i {
		case 0:
			d.string(val, &r.ID, s, path)
		case 1:
			d.string(val, &r.Name, s, path)
		case 2:
			d.string(val, &r.Scheme, s, path)
		case 3:
			d.string(val, &r.Host, s, path)
		case 4:
			d.string(val, &r.PathPrefix, s, path)
		case 5:
			d.string(val, &r.Kind, s, path)
		case 6:
			d.int(val, &r.MaxRequestBytes, "int64", s, path)
		case 7:
			d.bool(val, &r.UpstreamOAuth2, s, path)
		case 8:
			r.Policy = d.any(val, s, path)
		case 9:
			d.bool(val, &r.NoToolListFilter, s, path)
		case 10:
			r.PolicyShadow = d.any(val, s, path)
		case 11:
			d.toolPins(val, &r.ToolPins)
		}
	})
}

func (d *decoder) toolPins(v jsontext.Value, p **ToolPins) {
	const s, path = "Route", "routes.tool_pins"
	switch v.Kind() {
	case jsontext.Null:
		*p = nil
		return
	case jsontext.Object:
	default:
		d.fail(v, "pluginconf.ToolPins", s, path)
		return
	}
	if *p == nil {
		*p = new(ToolPins)
	}
	tp := *p
	fields(v, []string{"warn", "digests"}, func(i int, val jsontext.Value) {
		switch i {
		case 0:
			d.bool(val, &tp.Warn, "ToolPins", "routes.tool_pins.warn")
		case 1:
			d.digests(val, &tp.Digests)
		}
	})
}

func (d *decoder) digests(v jsontext.Value, m *map[string]string) {
	const s, path = "ToolPins", "routes.tool_pins.digests"
	switch v.Kind() {
	case jsontext.Null:
		*m = nil
		return
	case jsontext.Object:
	default:
		d.fail(v, "map[string]string", s, path)
		return
	}
	if *m == nil {
		*m = map[string]string{}
	}
	for k, val := range v.Members() {
		var e string
		d.string(val, &e, s, path)
		(*m)[decodeString(k.Raw())] = e
	}
}

// growTo makes list[i] addressable as reflect's Grow and SetLen do: an element within the
// capacity keeps what an earlier decoding left there.
func growTo[T any](list []T, i int) []T {
	if i >= cap(list) {
		list = slices.Grow(list, 1)
	}
	if i >= len(list) {
		list = list[:i+1]
	}
	return list
}

// shrinkTo ends a decoded list at n elements, and makes an empty one non-nil.
func shrinkTo[T any](list []T, n int) []T {
	if n == 0 {
		return []T{}
	}
	return list[:n]
}

func (d *decoder) string(v jsontext.Value, dst *string, s, path string) {
	switch v.Kind() {
	case jsontext.String:
		*dst = decodeString(v.Raw())
	case jsontext.Null:
	default:
		d.fail(v, "string", s, path)
	}
}

func (d *decoder) strings(v jsontext.Value, dst *[]string, s, path string) {
	switch v.Kind() {
	case jsontext.Null:
		*dst = nil
		return
	case jsontext.Array:
	default:
		d.fail(v, "[]string", s, path)
		return
	}
	list := *dst
	i := 0
	for e := range v.Elements() {
		list = growTo(list, i)
		d.string(e, &list[i], s, path)
		i++
	}
	*dst = shrinkTo(list, i)
}

func (d *decoder) bool(v jsontext.Value, dst *bool, s, path string) {
	switch v.Kind() {
	case jsontext.True:
		*dst = true
	case jsontext.False:
		*dst = false
	case jsontext.Null:
	default:
		d.fail(v, "bool", s, path)
	}
}

// int stores an integer number (strconv.ParseInt syntax: no fraction, no exponent).
func (d *decoder) int(v jsontext.Value, dst *int64, typ, s, path string) {
	switch v.Kind() {
	case jsontext.Number:
		n, err := strconv.ParseInt(v.Raw(), 10, 64)
		if err != nil {
			d.failValue("number "+v.Raw(), typ, s, path)
			return
		}
		*dst = n
	case jsontext.Null:
	default:
		d.fail(v, typ, s, path)
	}
}

func (d *decoder) uint(v jsontext.Value, bits int, typ, s, path string) (uint64, bool) {
	switch v.Kind() {
	case jsontext.Number:
		n, err := strconv.ParseUint(v.Raw(), 10, 64)
		if err != nil || n>>bits != 0 {
			d.failValue("number "+v.Raw(), typ, s, path)
			return 0, false
		}
		return n, true
	case jsontext.Null:
	default:
		d.fail(v, typ, s, path)
	}
	return 0, false
}

// any decodes a policy as encoding/json decodes into an interface{}.
func (d *decoder) any(v jsontext.Value, s, path string) any {
	switch v.Kind() {
	case jsontext.Object:
		m := map[string]any{}
		for k, val := range v.Members() {
			m[decodeString(k.Raw())] = d.any(val, s, path)
		}
		return m
	case jsontext.Array:
		list := make([]any, 0)
		for e := range v.Elements() {
			list = append(list, d.any(e, s, path))
		}
		return list
	case jsontext.String:
		return decodeString(v.Raw())
	case jsontext.Number:
		f, err := strconv.ParseFloat(v.Raw(), 64)
		if err != nil {
			d.failValue("number "+v.Raw(), "float64", s, path)
			return nil
		}
		return f
	case jsontext.True:
		return true
	case jsontext.False:
		return false
	}
	return nil
}

// decodeString returns the value of the raw JSON string raw as encoding/json decodes it:
// each byte that is not part of valid UTF-8 and each \u escape of a surrogate that does not
// pair with the next one as U+FFFD.
func decodeString(raw string) string {
	s := raw[1 : len(raw)-1]
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] != '\\' && s[i] >= ' ' && s[i] < utf8.RuneSelf
	}
	if plain || utf8.ValidString(s) && !containsByte(s, '\\') {
		return s
	}
	out := make([]byte, 0, len(s)+2*utf8.UTFMax)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			e := s[i+1]
			i += 2
			switch e {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(s[i : i+4])
				i += 4
				if utf16.IsSurrogate(r) {
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, hex4(s[i+2:i+6])); dec != unicode.ReplacementChar {
							out = utf8.AppendRune(out, dec)
							i += 6
							continue
						}
					}
					r = unicode.ReplacementChar
				}
				out = utf8.AppendRune(out, r)
			default: // '"', '\\', '/'
				out = append(out, e)
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			out = utf8.AppendRune(out, r)
			i += n
		}
	}
	return string(out)
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

// hex4 returns the value of four hex digits (validated text has no others), or -1.
func hex4(h string) rune {
	n, err := strconv.ParseUint(h, 16, 16)
	if err != nil {
		return -1
	}
	return rune(n)
}

// foldName folds a member name as encoding/json does to match it case-insensitively:
// ASCII letters to upper case, other characters to the smallest of their simple folding
// orbit.
func foldName(s string) string {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			out = append(out, byte(r))
			continue
		}
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		out = utf8.AppendRune(out, r)
	}
	return string(out)
}
