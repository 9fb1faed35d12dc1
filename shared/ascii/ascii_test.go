package ascii

import "testing"

func TestEqualFold(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s, lower string
		want     bool
	}{
		{"Charset", "charset", true},
		{"UTF-8", "utf-8", true},
		{"charſet", "charset", false}, // the long s folds to s in Unicode, never in HTTP
		{"\u212aey", "key", false},    // the Kelvin sign
		{"charse", "charset", false},
		{"", "", true},
	} {
		if got := EqualFold(tt.s, tt.lower); got != tt.want {
			t.Errorf("EqualFold(%q, %q) = %v, want %v", tt.s, tt.lower, got, tt.want)
		}
	}
}
