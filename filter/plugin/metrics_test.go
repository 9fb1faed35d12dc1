package plugin

import (
	"strings"
	"testing"
)

func TestReplaceByte(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s        string
		old, new byte
	}{
		{"", '-', '_'}, {"token-expired", '-', '_'}, {"--a--", '-', '_'}, {"mcp_session_id", '_', '-'},
		{"none", '-', '_'}, {"é-\xff", '-', '_'},
	} {
		want := strings.ReplaceAll(tt.s, string(tt.old), string(tt.new))
		if got := replaceByte(tt.s, tt.old, tt.new); got != want {
			t.Errorf("replaceByte(%q, %q, %q) = %q, want %q", tt.s, tt.old, tt.new, got, want)
		}
	}
}
