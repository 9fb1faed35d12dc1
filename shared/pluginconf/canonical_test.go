package pluginconf

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func TestCanonical_SortsKeysCompactsAndKeepsNumbers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`{"b": 1, "a": {"d": [1, 2.50, 1e3], "c": "x<y&z"}}`, `{"a":{"c":"x<y&z","d":[1,2.50,1e3]},"b":1}`},
		{` [ ] `, `[]`},
		{`{"routes":null,"a":true}`, `{"a":true,"routes":null}`},
		{`"\u00e9\u2028"`, `"é\u2028"`},
	} {
		got, err := Canonical([]byte(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if string(got) != tc.want {
			t.Errorf("Canonical(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{``, `{`, `{} {}`, `{"a":}`} {
		if _, err := Canonical([]byte(bad)); err == nil {
			t.Errorf("Canonical(%q) accepted", bad)
		}
	}
}

// FuzzCanonical: the canonical form is a fixed point and means what the input meant.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, `{"routes":[{"policy":{"allow":{"and":[{"email":{"is":"a@b"}}]}}}]}`, `1e400`, `"<>&"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Canonical(b)
		if err != nil {
			return
		}
		c2, err := Canonical(c)
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("not a fixed point: %s -> %s (%v)", c, c2, err)
		}
		var x, y any
		if json.Unmarshal(b, &x) != nil {
			return // Canonical accepted what encoding/json refuses: only numbers out of range
		}
		if err := json.Unmarshal(c, &y); err != nil || !reflect.DeepEqual(x, y) {
			t.Fatalf("meaning changed: %s -> %s", b, c)
		}
	})
}
