package pluginconf

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// decode reads a plugin configuration into c as encoding/json's Unmarshal would (keys matched
// exactly, else case-insensitively; unknown keys ignored; null leaves a field as it is, or
// clears a list, map, pointer or policy; a later duplicate key wins), without
// encoding/json: reflection-based decoding made up a fifth of filter.wasm (BENCHMARKS.md,
// issue 17). FuzzDecode_MatchesEncodingJSON holds the two readings equal.
func decode(b []byte, c *Config) error {
	if !gjson.ValidBytes(b) {
		return errors.New("invalid JSON")
	}
	v := gjson.ParseBytes(b)
	switch v.Type {
	case gjson.Null:
		return nil
	case gjson.JSON:
		if strings.HasPrefix(v.Raw, "{") {
			return decodeObject(v, "", c.field)
		}
	}
	return typeError("", "object", v)
}

// field decodes the value of one key of the configuration object.
func (c *Config) field(key string, v gjson.Result) error {
	switch matchKey(key, configKeys) {
	case "token_service_cluster":
		return decodeString(key, v, &c.Cluster)
	case "token_service_authority":
		return decodeString(key, v, &c.Authority)
	case "filter_key":
		return decodeString(key, v, &c.FilterKey)
	case "check_timeout_ms":
		return decodeUint32(key, v, &c.CheckTimeoutMillis)
	case "cache_ttl_s":
		return decodeInt64(key, v, &c.CacheTTLSeconds)
	case "authenticate_service_url":
		return decodeString(key, v, &c.AuthenticateServiceURL)
	case "authorize_log_fields":
		return decodeStrings(key, v, &c.AuthorizeLogFields)
	case "authorize_log_redact":
		return decodeStrings(key, v, &c.AuthorizeLogRedact)
	case "authorize_log_max_parameter_bytes":
		var n int64
		if v.Type == gjson.Null {
			return nil
		}
		if err := decodeInt64(key, v, &n); err != nil {
			return err
		}
		c.AuthorizeLogMaxParameterBytes = int(n)
		if int64(c.AuthorizeLogMaxParameterBytes) != n {
			return typeError(key, "int", v)
		}
	case "routes":
		if v.Type == gjson.Null {
			c.Routes = nil
			return nil
		}
		if !v.IsArray() {
			return typeError(key, "array", v)
		}
		// As encoding/json does, a repeated key decodes into the routes already read.
		prev := c.Routes
		c.Routes = c.Routes[:0:0]
		var err error
		i := 0
		v.ForEach(func(_, item gjson.Result) bool {
			r := Route{}
			if i < len(prev) {
				r = prev[i]
			}
			c.Routes = append(c.Routes, r)
			p := key + "[" + strconv.Itoa(i) + "]"
			i++
			if item.Type == gjson.Null {
				return true
			}
			if !item.IsObject() {
				err = typeError(p, "object", item)
				return false
			}
			err = decodeObject(item, p+".", c.Routes[len(c.Routes)-1].field)
			return err == nil
		})
		if c.Routes == nil {
			c.Routes = []Route{}
		}
		return err
	}
	return nil
}

var configKeys = []string{"token_service_cluster", "token_service_authority", "filter_key", "check_timeout_ms", "cache_ttl_s",
	"authenticate_service_url", "authorize_log_fields", "authorize_log_redact", "authorize_log_max_parameter_bytes", "routes"}

var routeKeys = []string{"id", "name", "scheme", "host", "path_prefix", "kind", "max_request_bytes", "upstream_oauth2", "policy",
	"no_tool_list_filter", "policy_shadow", "tool_pins"}

// field decodes the value of one key of a route.
func (r *Route) field(key string, v gjson.Result) error {
	switch matchKey(key, routeKeys) {
	case "id":
		return decodeString(key, v, &r.ID)
	case "name":
		return decodeString(key, v, &r.Name)
	case "scheme":
		return decodeString(key, v, &r.Scheme)
	case "host":
		return decodeString(key, v, &r.Host)
	case "path_prefix":
		return decodeString(key, v, &r.PathPrefix)
	case "kind":
		return decodeString(key, v, &r.Kind)
	case "max_request_bytes":
		return decodeInt64(key, v, &r.MaxRequestBytes)
	case "upstream_oauth2":
		return decodeBool(key, v, &r.UpstreamOAuth2)
	case "policy":
		r.Policy = decodeAny(v)
	case "no_tool_list_filter":
		return decodeBool(key, v, &r.NoToolListFilter)
	case "policy_shadow":
		r.PolicyShadow = decodeAny(v)
	case "tool_pins":
		if v.Type == gjson.Null {
			r.ToolPins = nil
			return nil
		}
		if !v.IsObject() {
			return typeError(key, "object", v)
		}
		if r.ToolPins == nil {
			r.ToolPins = &ToolPins{}
		}
		return decodeObject(v, key+".", r.ToolPins.field)
	}
	return nil
}

// field decodes the value of one key of tool_pins.
func (p *ToolPins) field(key string, v gjson.Result) error {
	switch matchKey(key, []string{"warn", "digests"}) {
	case "warn":
		return decodeBool(key, v, &p.Warn)
	case "digests":
		if v.Type == gjson.Null {
			p.Digests = nil
			return nil
		}
		if !v.IsObject() {
			return typeError(key, "object", v)
		}
		if p.Digests == nil {
			p.Digests = map[string]string{}
		}
		var err error
		v.ForEach(func(k, d gjson.Result) bool {
			if d.Type == gjson.Null {
				p.Digests[validString(k.Str)] = ""
				return true
			}
			s := p.Digests[validString(k.Str)]
			err = decodeString(key, d, &s)
			p.Digests[validString(k.Str)] = s
			return err == nil
		})
		return err
	}
	return nil
}

// decodeObject calls field for each member of the object v in order, with the key path
// prefix+key in errors.
func decodeObject(v gjson.Result, prefix string, field func(string, gjson.Result) error) error {
	var err error
	v.ForEach(func(k, m gjson.Result) bool {
		if e := field(validString(k.Str), m); e != nil {
			err = errors.New(prefix + e.Error())
			return false
		}
		return true
	})
	return err
}

// matchKey returns the key of keys that key names: the same, else the first equal under
// Unicode case folding (as encoding/json matches struct fields), else "".
func matchKey(key string, keys []string) string {
	for _, k := range keys {
		if k == key {
			return k
		}
	}
	for _, k := range keys {
		if strings.EqualFold(k, key) {
			return k
		}
	}
	return ""
}

func decodeString(key string, v gjson.Result, dst *string) error {
	switch v.Type {
	case gjson.Null:
	case gjson.String:
		*dst = validString(v.Str)
	default:
		return typeError(key, "string", v)
	}
	return nil
}

func decodeBool(key string, v gjson.Result, dst *bool) error {
	switch v.Type {
	case gjson.Null:
	case gjson.True, gjson.False:
		*dst = v.Type == gjson.True
	default:
		return typeError(key, "bool", v)
	}
	return nil
}

func decodeInt64(key string, v gjson.Result, dst *int64) error {
	switch v.Type {
	case gjson.Null:
		return nil
	case gjson.Number:
		n, err := strconv.ParseInt(v.Raw, 10, 64)
		if err != nil {
			return typeError(key, "int64", v)
		}
		*dst = n
		return nil
	}
	return typeError(key, "int64", v)
}

func decodeUint32(key string, v gjson.Result, dst *uint32) error {
	switch v.Type {
	case gjson.Null:
		return nil
	case gjson.Number:
		n, err := strconv.ParseUint(v.Raw, 10, 32)
		if err != nil {
			return typeError(key, "uint32", v)
		}
		*dst = uint32(n)
		return nil
	}
	return typeError(key, "uint32", v)
}

// decodeStrings decodes a list of strings: null clears it, [] makes it empty (not nil).
func decodeStrings(key string, v gjson.Result, dst *[]string) error {
	if v.Type == gjson.Null {
		*dst = nil
		return nil
	}
	if !v.IsArray() {
		return typeError(key, "array", v)
	}
	prev, out := *dst, []string{}
	var err error
	i := 0
	v.ForEach(func(_, item gjson.Result) bool {
		var s string
		if i < len(prev) {
			s = prev[i] // null keeps the element read before, as in encoding/json
		}
		err = decodeString(key+"["+strconv.Itoa(i)+"]", item, &s)
		out = append(out, s)
		i++
		return err == nil
	})
	*dst = out
	return err
}

// decodeAny is v as encoding/json decodes it into an interface value: nil, bool, float64,
// string, []any or map[string]any.
func decodeAny(v gjson.Result) any {
	switch v.Type {
	case gjson.True:
		return true
	case gjson.False:
		return false
	case gjson.Number:
		return v.Num
	case gjson.String:
		return validString(v.Str)
	case gjson.JSON:
		if v.IsArray() {
			out := []any{}
			v.ForEach(func(_, item gjson.Result) bool {
				out = append(out, decodeAny(item))
				return true
			})
			return out
		}
		out := map[string]any{}
		v.ForEach(func(k, item gjson.Result) bool {
			out[validString(k.Str)] = decodeAny(item)
			return true
		})
		return out
	}
	return nil
}

// validString replaces each byte of s that is not part of valid UTF-8 with U+FFFD, as
// encoding/json does.
func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// typeError describes a value of the wrong type at key.
func typeError(key, want string, v gjson.Result) error {
	got := "number"
	switch v.Type {
	case gjson.String:
		got = "string"
	case gjson.True, gjson.False:
		got = "bool"
	case gjson.JSON:
		got = "object"
		if v.IsArray() {
			got = "array"
		}
	}
	if key == "" {
		return errors.New("cannot read " + got + " as " + want)
	}
	return errors.New(key + ": cannot read " + got + " as " + want)
}
