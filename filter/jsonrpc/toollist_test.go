package jsonrpc

import "testing"

// Ids a client takes for the same request share a key: the TypeScript SDK matches responses
// with Number(response.id), so a string that reads as the number answers a numeric request.
func TestIDKey(t *testing.T) {
	t.Parallel()
	same := [][]string{
		{`2`, `2.0`, `2e0`, `"2"`, `" 2 "`, `"0x2"`, `"2.0"`, `"+2"`, `"\u0032"`, `"0b10"`},
		{`0`, `-0`, `""`, `" "`, `"0"`},
		{`"abc"`, `"ab\u0063"`},
	}
	for _, group := range same {
		for _, id := range group[1:] {
			if IDKey(id) != IDKey(group[0]) {
				t.Errorf("IDKey(%s) = %q, IDKey(%s) = %q; want equal", id, IDKey(id), group[0], IDKey(group[0]))
			}
		}
	}
	for _, pair := range [][2]string{{`2`, `3`}, {`2`, `"2x"`}, {`"abc"`, `"ABC"`}, {`2`, `"1_0"`}, {`1`, `"Infinity"`}, {`2`, `null`}} {
		if IDKey(pair[0]) == IDKey(pair[1]) {
			t.Errorf("IDKey(%s) == IDKey(%s)", pair[0], pair[1])
		}
	}
}
