package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// This file keeps the configuration strict where YAML and the environment are lenient:
// booleans are YAML 1.2's true and false only (yaml.v3 still turns YAML 1.1's yes, on, y
// into a bool field, and a quoted "true" is a string), runtime_flags names only known flags,
// a mistyped key or value suggests the nearest valid one, a problem with a value that came
// from an environment variable names the variable, and a relative storage.path is resolved
// against the configuration file's folder.

// RuntimeFlags are the known runtime_flags keys and what each switches on.
var runtimeFlags = map[string]string{
	"mcp": "MCP support (mcp routes, the authorization server)",
}

// checkBool reports a scalar that is not a YAML 1.2 boolean: yes/no/on/off/y/n (YAML 1.1)
// and quoted "true" are refused, so that a value means the same to every YAML reader.
func checkBool(n *yaml.Node, path string, problems *Error) {
	if n.Kind != yaml.ScalarNode {
		problems.add(path, "want true or false")
		return
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		problems.add(path, "want true or false without quotes, got the string %q", n.Value)
		return
	}
	switch n.Value {
	case "true", "True", "TRUE", "false", "False", "FALSE":
		return
	}
	problems.add(path, "want true or false, got %q (YAML 1.1 spellings such as yes, no, on and off are not booleans here)", n.Value)
}

// validateRuntimeFlags refuses flags this gateway does not know.
func (c *Config) validateRuntimeFlags(e *Error) {
	names := make([]string, 0, len(runtimeFlags))
	for n := range runtimeFlags {
		names = append(names, n)
	}
	sort.Strings(names)
	keys := make([]string, 0, len(c.RuntimeFlags))
	for k := range c.RuntimeFlags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := runtimeFlags[k]; !ok {
			e.add("runtime_flags."+k, "unknown runtime flag%s (known: %s)", suggestion(k, names), strings.Join(names, ", "))
		}
	}
}

// suggestion returns `; did you mean "x"?` for the candidate nearest to got, or "" when none
// is near (an edit distance of at most a third of the word, and at least 1).
func suggestion(got string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := editDistance(strings.ToLower(got), c)
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(len(got)/3, 1)
	if best == "" || bestD > limit || bestD == 0 && got == best {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// keySuggestion suggests the nearest yaml key of struct type t.
func keySuggestion(t reflect.Type, key string) string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return suggestion(key, keys)
}

// editDistance is the optimal string alignment distance of a and b (insertions, deletions,
// substitutions and transpositions of adjacent bytes; keys are ASCII).
func editDistance(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		return max(len(a), len(b))
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// envKeys maps the key paths the environment can set to their variables.
var envKeys = map[string]string{
	"idp_client_id":            "IDP_CLIENT_ID",
	"idp_client_secret":        "IDP_CLIENT_SECRET",
	"idp_client_secret_file":   "IDP_CLIENT_SECRET_FILE",
	"idp_provider":             "IDP_PROVIDER",
	"idp_provider_url":         "IDP_PROVIDER_URL",
	"idp_scopes":               "IDP_SCOPES",
	"idp_request_params":       "IDP_REQUEST_PARAMS",
	"shared_secret":            "SHARED_SECRET",
	"cookie_secret":            "COOKIE_SECRET",
	"authenticate_service_url": "AUTHENTICATE_SERVICE_URL",
}

// nameEnvSources appends "(from the environment variable X)" to every problem at a key whose
// value came from the environment, so the operator looks in the right place.
func nameEnvSources(err error, env LookupEnv) error {
	e, ok := err.(*Error)
	if !ok || env == nil {
		return err
	}
	for i, p := range e.Problems {
		key, _, _ := strings.Cut(p.Key, "[")
		name, ok := envKeys[key]
		if !ok {
			continue
		}
		if _, set := env(name); set && !strings.Contains(p.Message, name) {
			e.Problems[i].Message += " (the value comes from the environment variable " + name + ")"
		}
	}
	return e
}

// resolveStoragePath makes a relative SQLite storage.path written in the configuration
// relative to the folder of the configuration file at configPath (the default, gateway.db,
// stays in the working directory), not to the working directory of whoever starts the
// service, and returns a note saying so ("" when nothing changed).
func (c *Config) resolveStoragePath(configPath string) string {
	p := c.Storage.Path
	if c.Storage.Type != "sqlite" || p == "" || c.storagePathDefaulted || filepath.IsAbs(p) || p == ":memory:" || strings.HasPrefix(p, "file:") {
		return ""
	}
	dir, err := filepath.Abs(filepath.Dir(configPath))
	if err != nil {
		return ""
	}
	c.Storage.Path = filepath.Join(dir, p)
	return fmt.Sprintf("storage.path %q is relative: resolved against the configuration file's folder to %s", p, c.Storage.Path)
}
