package policytest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpmesh/gateway/shared/authlog"
	"github.com/mcpmesh/gateway/shared/config"
	"gopkg.in/yaml.v3"
)

// Record is an authorization record the filter wrote ("authorize check", docs/policy.md).
type Record struct {
	User, Email        string
	Allow, Deny        bool
	AllowWhyTrue       []string
	AllowWhyFalse      []string
	DenyWhyFalse       []string
	MCPMethod, MCPTool string
	// Shadow is the decision of the route's shadow policy (allow or deny), "" when the
	// route has none; ShadowWhy its reasons (shadow-allow-why-true when it allows,
	// shadow-allow-why-false when it denies).
	Shadow    string
	ShadowWhy []string
	// Fields are the fields the record has (authorize_log_fields).
	Fields map[string]bool
	// Line is the record as logged.
	Line string
}

func parseRecord(line string) (Record, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(line), &m) != nil {
		return Record{}, false
	}
	var msg string
	if json.Unmarshal(m["message"], &msg) != nil || msg != authlog.Message {
		return Record{}, false
	}
	r := Record{Fields: map[string]bool{}, Line: line}
	for k := range m {
		r.Fields[k] = true
	}
	_ = json.Unmarshal(m[string(authlog.FieldUser)], &r.User)
	_ = json.Unmarshal(m[string(authlog.FieldEmail)], &r.Email)
	_ = json.Unmarshal(m[string(authlog.FieldAllow)], &r.Allow)
	_ = json.Unmarshal(m[string(authlog.FieldDeny)], &r.Deny)
	_ = json.Unmarshal(m[string(authlog.FieldAllowWhyTrue)], &r.AllowWhyTrue)
	_ = json.Unmarshal(m[string(authlog.FieldAllowWhyFalse)], &r.AllowWhyFalse)
	_ = json.Unmarshal(m[string(authlog.FieldDenyWhyFalse)], &r.DenyWhyFalse)
	_ = json.Unmarshal(m[string(authlog.FieldMCPMethod)], &r.MCPMethod)
	_ = json.Unmarshal(m[string(authlog.FieldMCPTool)], &r.MCPTool)
	var shadow bool
	if json.Unmarshal(m["shadow-allow"], &shadow) == nil {
		r.Shadow = Deny
		why := "shadow-allow-why-false"
		if shadow {
			r.Shadow, why = Allow, "shadow-allow-why-true"
		}
		_ = json.Unmarshal(m[why], &r.ShadowWhy)
	}
	return r, true
}

// Reasons renders the reasons of the records as the report shows them.
func Reasons(records []Record) string {
	var parts []string
	for i, r := range records {
		var fs []string
		add := func(name string, rs []string) {
			if len(rs) > 0 {
				fs = append(fs, name+": "+strings.Join(rs, ","))
			}
		}
		add("allow-why-true", r.AllowWhyTrue)
		add("allow-why-false", r.AllowWhyFalse)
		add("deny-why-false", r.DenyWhyFalse)
		if r.Shadow != "" {
			fs = append(fs, "shadow: "+r.Shadow)
			add("shadow reasons", r.ShadowWhy)
		}
		s := strings.Join(fs, "; ")
		if len(records) > 1 {
			s = fmt.Sprintf("[%d] %s", i, s)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "(no authorization record)"
	}
	return strings.Join(parts, " | ")
}

// compare says how outcome and records fall short of e.
func compare(e Expect, o Outcome, records []Record) []string {
	var problems []string
	switch {
	case o.Stuck:
		problems = append(problems, fmt.Sprintf("expected %s, but the filter neither answered nor forwarded the request", e))
	case e.Decision == Allow && !o.Forwarded:
		problems = append(problems, fmt.Sprintf("expected allow, got deny %d: %s", o.Status, denial(o, records)))
	case e.Decision == Deny && o.Forwarded:
		problems = append(problems, fmt.Sprintf("expected %s, but the request was forwarded to the upstream (%s)", e, Reasons(records)))
	case e.Status != 0 && o.Status != e.Status:
		problems = append(problems, fmt.Sprintf("expected deny %d, got deny %d: %s", e.Status, o.Status, denial(o, records)))
	}
	if e.Shadow != "" {
		got := ""
		for _, r := range records {
			if r.Shadow == Deny || got == "" {
				got = r.Shadow
			}
		}
		switch {
		case got == "":
			problems = append(problems, fmt.Sprintf("expected shadow %s, but no record carries a shadow decision (does the route have a policy_shadow?)", e.Shadow))
		case got != e.Shadow:
			problems = append(problems, fmt.Sprintf("expected shadow %s, got shadow %s: %s", e.Shadow, got, Reasons(records)))
		}
	}
	want := []struct {
		field string
		want  []string
		got   func(Record) []string
	}{
		{string(authlog.FieldAllowWhyTrue), e.AllowWhyTrue, func(r Record) []string { return r.AllowWhyTrue }},
		{string(authlog.FieldAllowWhyFalse), e.AllowWhyFalse, func(r Record) []string { return r.AllowWhyFalse }},
		{string(authlog.FieldDenyWhyFalse), e.DenyWhyFalse, func(r Record) []string { return r.DenyWhyFalse }},
	}
	for _, w := range want {
		if len(w.want) == 0 {
			continue
		}
		if len(records) == 0 {
			problems = append(problems, fmt.Sprintf("expected %s %v, but the filter wrote no authorization record (it refused the request before its policy decided: %s)", w.field, w.want, denial(o, nil)))
			continue
		}
		if !records[0].Fields[w.field] {
			problems = append(problems, fmt.Sprintf("expected %s %v, but the records have no %s field: add it to authorize_log_fields", w.field, w.want, w.field))
			continue
		}
		var got []string
		for _, r := range records {
			got = append(got, w.got(r)...)
		}
		for _, reason := range w.want {
			if !slices.Contains(got, reason) {
				problems = append(problems, fmt.Sprintf("expected %s to contain %s, got %v", w.field, reason, got))
			}
		}
	}
	return problems
}

// denial says why the filter answered the request itself.
func denial(o Outcome, records []Record) string {
	if len(records) > 0 {
		return Reasons(records)
	}
	var body struct {
		ErrorDescription string `json:"error_description"`
	}
	if json.Unmarshal([]byte(o.Body), &body) == nil && body.ErrorDescription != "" {
		return "the filter answered " + strconv.Quote(body.ErrorDescription) + " (no authorization record)"
	}
	if o.Body != "" && len(o.Body) < 200 {
		return "the filter answered " + strconv.Quote(o.Body) + " (no authorization record)"
	}
	return "no authorization record"
}

// ConfigError is a problem in the gateway configuration, with the line of each key.
type ConfigError struct {
	File  string
	Lines []string
	Err   error
}

func (e *ConfigError) Error() string { return strings.Join(e.Lines, "\n") }
func (e *ConfigError) Unwrap() error { return e.Err }

var indexRE = regexp.MustCompile(`^([^\[]*)((?:\[\d+\])*)$`)

// configError adds the file and the line of each key config.Load names.
func configError(path string, err error) error {
	var ce *config.Error
	if !errors.As(err, &ce) {
		return &ConfigError{File: path, Lines: []string{err.Error()}, Err: err}
	}
	var root yaml.Node
	data, _ := os.ReadFile(path)
	_ = yaml.Unmarshal(data, &root)
	out := &ConfigError{File: path, Err: err}
	for _, p := range ce.Problems {
		key := p.Key
		// Validation names the route and then the key inside it ("routes[2]: policy.deny…").
		if k, _, ok := strings.Cut(p.Message, ": "); ok && strings.HasPrefix(key, "routes[") && !strings.Contains(k, " ") {
			key += "." + k
		}
		line := lineOf(&root, key)
		msg := (&config.Error{Problems: []config.Problem{p}}).Error()
		if line > 0 {
			out.Lines = append(out.Lines, fmt.Sprintf("%s:%d: %s", path, line, msg))
		} else {
			out.Lines = append(out.Lines, fmt.Sprintf("%s: %s", path, msg))
		}
	}
	return out
}

// lineOf returns the line of the deepest node of key path ("routes[1].mcp.server") found.
func lineOf(root *yaml.Node, path string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	line := 0
	if path == "" {
		return line
	}
	for _, part := range strings.Split(path, ".") {
		m := indexRE.FindStringSubmatch(part)
		if m == nil {
			return line
		}
		if m[1] != "" {
			found := false
			for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == m[1] {
					line, n, found = n.Content[i].Line, n.Content[i+1], true
					break
				}
			}
			if !found {
				return line
			}
		}
		for _, idx := range regexp.MustCompile(`\d+`).FindAllString(m[2], -1) {
			i, _ := strconv.Atoi(idx)
			if n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
		}
	}
	return line
}
