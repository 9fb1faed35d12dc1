package policy

// matchOp is a string matcher operator.
type matchOp uint8

const (
	matchIs matchOp = iota
	matchStartsWith
	matchEndsWith
	matchContains
	matchIn
	matchNotIn
)

// parseMatchOp returns the operator named name in a policy.
func parseMatchOp(name string) (matchOp, bool) {
	switch name {
	case "is":
		return matchIs, true
	case "starts_with":
		return matchStartsWith, true
	case "ends_with":
		return matchEndsWith, true
	case "contains":
		return matchContains, true
	case "in":
		return matchIn, true
	case "not_in":
		return matchNotIn, true
	}
	return 0, false
}

// matchTerm is one operator with its operand.
type matchTerm struct {
	op   matchOp
	s    string   // is, starts_with, ends_with, contains
	list []string // in, not_in
}

// matcher holds when all its terms hold. When fold is set, comparisons ignore ASCII case
// and the operands are stored in lower case.
type matcher struct {
	terms []matchTerm
	fold  bool
}

func (m *matcher) match(s string) bool {
	if len(m.terms) == 0 {
		return false
	}
	for i := range m.terms {
		if !m.terms[i].match(s, m.fold) {
			return false
		}
	}
	return true
}

func (t *matchTerm) match(s string, fold bool) bool {
	switch t.op {
	case matchIs:
		return equal(s, t.s, fold)
	case matchStartsWith:
		return len(s) >= len(t.s) && equal(s[:len(t.s)], t.s, fold)
	case matchEndsWith:
		return len(s) >= len(t.s) && equal(s[len(s)-len(t.s):], t.s, fold)
	case matchContains:
		for i := 0; i+len(t.s) <= len(s); i++ {
			if equal(s[i:i+len(t.s)], t.s, fold) {
				return true
			}
		}
		return false
	case matchIn, matchNotIn:
		found := false
		for _, x := range t.list {
			if equal(s, x, fold) {
				found = true
				break
			}
		}
		return found == (t.op == matchIn)
	}
	return false
}

// equal compares s with want. With fold, want is lower case and ASCII letters of s match
// regardless of case; other bytes, including every byte of a multi-byte UTF-8 sequence,
// must be identical. (Unicode case folding is deliberately not used: it would make, for
// instance, the Kelvin sign match "k".)
func equal(s, want string, fold bool) bool {
	if len(s) != len(want) {
		return false
	}
	if !fold {
		return s == want
	}
	for i := 0; i < len(s); i++ {
		if lowerASCII(s[i]) != want[i] {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// toLowerASCII returns s with its ASCII letters in lower case.
func toLowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				b[j] = lowerASCII(b[j])
			}
			return string(b)
		}
	}
	return s
}
