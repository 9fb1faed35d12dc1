package plugin

import (
	"strconv"
	"testing"
)

func TestQuote_AsStrconv(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "delete_everything", "a b~", `q"uote`, `back\slash`, "tab\there", "\x7f", "é漢字", "\xff", "\u2028"} {
		if got, want := quote(s), strconv.Quote(s); got != want {
			t.Errorf("quote(%q) = %s, want %s", s, got, want)
		}
	}
}
