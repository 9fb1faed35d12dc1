package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Problem is one thing wrong with a configuration, at a key path such as
// "routes[1].mcp.server.max_request_bytes".
type Problem struct {
	Key     string
	Message string
}

// Error lists every problem found in a configuration.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("config: ")
		if p.Key != "" {
			b.WriteString(p.Key)
			b.WriteString(": ")
		}
		b.WriteString(p.Message)
	}
	return b.String()
}

func (e *Error) add(key, format string, args ...any) {
	e.Problems = append(e.Problems, Problem{Key: key, Message: fmt.Sprintf(format, args...)})
}

func (e *Error) err() error {
	if len(e.Problems) == 0 {
		return nil
	}
	return e
}

// LookupEnv reads an environment variable; os.LookupEnv in production.
type LookupEnv func(key string) (string, bool)

// Load reads, parses and validates the configuration file at path, with environment
// overrides from the process environment.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	c, err := ParseDir(data, os.LookupEnv, filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	if note := c.resolveStoragePath(path); note != "" {
		c.Notes = append(c.Notes, note)
	}
	c.resolveCertificatePaths(path)
	return c, nil
}

// ParseDir is Parse for a configuration read from a file in dir: the lock files of
// mcp.server.tool_lock are relative to dir (Parse: to the working directory).
func ParseDir(data []byte, env LookupEnv, dir string) (*Config, error) {
	return parse(data, env, dir)
}

// Parse parses and validates a configuration. env supplies the environment overrides of
// docs/configuration.md (IDP_*, SHARED_SECRET, COOKIE_SECRET, AUTHENTICATE_SERVICE_URL); it may
// be nil.
func Parse(data []byte, env LookupEnv) (*Config, error) { return parse(data, env, "") }

func parse(data []byte, env LookupEnv, dir string) (*Config, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) { // an empty file: every required key is then reported
			root = yaml.Node{}
		} else {
			return nil, &Error{Problems: []Problem{{Message: "not valid YAML: " + err.Error()}}}
		}
	}
	var c Config
	problems := &Error{}
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		doc := root.Content[0]
		if doc.Kind != yaml.MappingNode && !(doc.Kind == yaml.ScalarNode && doc.Tag == "!!null") {
			return nil, &Error{Problems: []Problem{{Message: "the top level must be a mapping of keys"}}}
		}
		checkNode(doc, reflect.TypeOf(c), "", problems)
		if len(problems.Problems) > 0 {
			return nil, problems
		}
		if err := doc.Decode(&c); err != nil {
			return nil, &Error{Problems: []Problem{{Message: err.Error()}}}
		}
	}
	if env != nil {
		applyEnv(&c, env, problems)
	}
	c.resolveOAuthClientEnv(env)
	if err := problems.err(); err != nil {
		return nil, err
	}
	c.setDefaults()
	c.dir = dir
	if err := c.Validate(); err != nil {
		return nil, nameEnvSources(err, env)
	}
	return &c, nil
}

// checkNode walks a YAML node against the Go type it decodes into, reporting unknown keys
// and values of the wrong type with their key path.
func checkNode(n *yaml.Node, t reflect.Type, path string, problems *Error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	switch {
	case t.Kind() == reflect.Struct && reflect.PointerTo(t).Implements(unmarshalerType):
		decodeCheck(n, t, path, problems)
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			problems.add(path, "want a mapping of keys")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i].Value, n.Content[i+1]
			f, ok := fieldByTag(t, key)
			if !ok {
				problems.add(join(path, key), "unknown key%s", keySuggestion(t, key))
				continue
			}
			checkNode(val, f.Type, join(path, key), problems)
		}
	case t.Kind() == reflect.Slice && !reflect.PointerTo(t).Implements(unmarshalerType):
		if n.Kind != yaml.SequenceNode {
			problems.add(path, "want a list")
			return
		}
		for i, el := range n.Content {
			checkNode(el, t.Elem(), fmt.Sprintf("%s[%d]", path, i), problems)
		}
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			problems.add(path, "want a mapping")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkNode(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), problems)
		}
	case t.Kind() == reflect.Interface:
		// Free-form (policy): checked by its own parser.
	case t.Kind() == reflect.Bool:
		checkBool(n, path, problems)
	default:
		decodeCheck(n, t, path, problems)
	}
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

func decodeCheck(n *yaml.Node, t reflect.Type, path string, problems *Error) {
	v := reflect.New(t)
	if err := n.Decode(v.Interface()); err != nil {
		msg := err.Error()
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			msg = te.Errors[0]
			if i := strings.Index(msg, ": "); strings.HasPrefix(msg, "line ") && i > 0 {
				msg = msg[i+2:]
			}
		}
		problems.add(path, "%s", msg)
	}
}

func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == key && name != "-" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// applyEnv applies the environment overrides. Environment values win over the file.
func applyEnv(c *Config, env LookupEnv, problems *Error) {
	str := map[string]*string{
		"IDP_CLIENT_ID":            &c.IDPClientID,
		"IDP_CLIENT_SECRET":        &c.IDPClientSecret,
		"IDP_CLIENT_SECRET_FILE":   &c.IDPClientSecretFile,
		"IDP_PROVIDER":             &c.IDPProvider,
		"IDP_PROVIDER_URL":         &c.IDPProviderURL,
		"SHARED_SECRET":            &c.SharedSecret,
		"COOKIE_SECRET":            &c.CookieSecret,
		"AUTHENTICATE_SERVICE_URL": &c.AuthenticateServiceURL,
	}
	for name, dst := range str {
		if v, ok := env(name); ok {
			*dst = v
		}
	}
	if v, ok := env("IDP_SCOPES"); ok {
		c.IDPScopes = splitList(v)
	}
	if v, ok := env("IDP_REQUEST_PARAMS"); ok {
		m := map[string]string{}
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			problems.add("IDP_REQUEST_PARAMS", "want a JSON object of string values: %v", err)
		} else {
			c.IDPRequestParams = m
		}
	}
}

func (c *Config) setDefaults() {
	if c.CookieExpiration == 0 {
		c.CookieExpiration = Duration(DefaultCookieExpiration)
	}
	if c.Storage.Type == "" {
		c.Storage.Type = "sqlite"
	}
	if c.Storage.Type == "sqlite" && c.Storage.Path == "" {
		c.Storage.Path = DefaultSQLitePath
		c.storagePathDefaulted = true
	}
	ts := &c.TokenService
	setStr(&ts.Address, DefaultAddress)
	setStr(&ts.InternalAddress, DefaultInternalAddress)
	setStr(&ts.Cluster, DefaultCluster)
	setStr(&ts.Authority, DefaultAuthority)
	setDur(&ts.CheckTimeout, DefaultCheckTimeout)
	setDur(&ts.CheckCacheTTL, DefaultCheckCacheTTL)
	setDur(&ts.AccessTokenLifetime, DefaultAccessTokenLifetime)
	setDur(&ts.RefreshTokenLifetime, DefaultRefreshTokenLifetime)
	for i := range c.Routes {
		if s := c.Routes[i].MCP; s != nil && s.Server != nil && s.Server.MaxRequestBytes == 0 {
			s.Server.MaxRequestBytes = 4096
		}
	}
}

func setStr(p *string, v string) {
	if *p == "" {
		*p = v
	}
}

func setDur(p *Duration, v time.Duration) {
	if *p == 0 {
		*p = Duration(v)
	}
}
