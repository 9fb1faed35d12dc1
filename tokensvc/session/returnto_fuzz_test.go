package session

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzValidReturnTo checks that every accepted return_to stays on the host, also when read
// the way browsers read URLs (tabs and newlines dropped, "\" as "/").
func FuzzValidReturnTo(f *testing.F) {
	for _, s := range []string{"/", "/app?x=1", "//evil.com", `/\evil.com`, "/\t/evil.com", "https://evil.com", "/a#b", "/%2F%2Fx", "/.gateway/mcp/authorize?redirect_uri=https%3A%2F%2Fc.example"} {
		f.Add(s)
	}
	base, _ := url.Parse("https://app.example.com/.gateway/callback")
	f.Fuzz(func(t *testing.T, s string) {
		if !ValidReturnTo(s) {
			return
		}
		browserView := strings.NewReplacer("\t", "", "\n", "", "\r", "", `\`, "/").Replace(s)
		for _, v := range []string{s, browserView} {
			ref, err := url.Parse(v)
			if err != nil {
				t.Fatalf("accepted %q does not parse: %v", v, err)
			}
			if got := base.ResolveReference(ref); got.Host != "app.example.com" || got.Scheme != "https" {
				t.Fatalf("accepted %q leaves the host: %s", s, got)
			}
		}
	})
}
