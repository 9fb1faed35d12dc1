package config

import (
	"errors"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written as a Go duration string ("14h", "90s").
type Duration time.Duration

// UnmarshalYAML parses a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!int" || n.Tag == "!!float" {
		return errors.New("want a duration such as 90s or 14h")
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return errors.New("want a duration such as 90s or 14h, got " + quote(n.Value))
	}
	if v < 0 {
		return errors.New("must not be negative")
	}
	*d = Duration(v)
	return nil
}

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// StringList is a list of strings written either as a YAML list or as one comma-separated
// string (idp_scopes, docs/configuration.md).
type StringList []string

// UnmarshalYAML accepts a sequence of strings or a comma-separated string.
func (l *StringList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*l = splitList(n.Value)
		return nil
	case yaml.SequenceNode:
		var s []string
		if err := n.Decode(&s); err != nil {
			return errors.New("want a list of strings")
		}
		*l = s
		return nil
	}
	return errors.New("want a list of strings or a comma-separated string")
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func quote(s string) string { return `"` + s + `"` }
