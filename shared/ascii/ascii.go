// Package ascii compares protocol tokens the way HTTP and JSON parsers do: ASCII letters in
// either case, nothing else folded (unlike strings.EqualFold, the Kelvin sign is not k and the
// long s is not s). It compiles for wasip1; the filter uses it on its hot path.
package ascii

// EqualFold reports whether s equals lower, a lower-case ASCII string, with the ASCII letters
// of s in either case.
func EqualFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
