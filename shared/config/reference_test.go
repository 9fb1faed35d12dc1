package config

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// keyPaths returns every yaml key path of t, recursively: a struct field is "<prefix><key>",
// the elements of a list of structs are "<key>[].", a pointer is followed; maps, lists of
// scalars and types with their own YAML decoding end a path.
func keyPaths(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		path := prefix + key
		out = append(out, path)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			out = append(out, keyPaths(ft, path+".")...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, keyPaths(ft.Elem(), path+"[].")...)
		}
	}
	return out
}

func TestKeyPaths(t *testing.T) {
	t.Parallel()
	got := keyPaths(reflect.TypeFor[Config](), "")
	tests := []struct {
		path string
		want bool
	}{
		{"token_service.trusted_proxy_hops", true},
		{"routes[].mcp.server.upstream_oauth2.endpoint.auth_url", true},
		{"routes[].mcp.client", true},
		{"storage.path", true},
		{"cookie_expiration", true},
		{"idp_client_secret_resolved", false}, // yaml:"-"
		{"routes[].policy.allow", false},      // policy is its own language (policy.md)
	}
	for _, tt := range tests {
		if slices.Contains(got, tt.path) != tt.want {
			t.Errorf("keyPaths holds %s: %v, want %v", tt.path, !tt.want, tt.want)
		}
	}
}

// TestConfigurationReferenceNamesEveryKey keeps docs/configuration.md complete: every key
// path of Config appears in it backquoted.
func TestConfigurationReferenceNamesEveryKey(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range keyPaths(reflect.TypeFor[Config](), "") {
		if !strings.Contains(string(doc), "`"+p+"`") {
			t.Errorf("docs/configuration.md does not name `%s`", p)
		}
	}
}
