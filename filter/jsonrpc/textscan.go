package jsonrpc

import "github.com/mcpmesh/gateway/shared/jsontext"

// textScan holds the pieces shared by the two one-pass readers, the request's (reqscan.go)
// and the tool list's (toolscan.go): each validates a body as jsontext.Validate does while it
// reads the members it needs.
type textScan struct {
	b []byte
	s string // b as a string: the same memory
}

// peek returns b[i], or 0 (no JSON token) past the end.
func (t *textScan) peek(i int) byte {
	if i < len(t.b) {
		return t.b[i]
	}
	return 0
}

// key reads the member name at i (a quote, if the text is valid) and the colon after it: the
// raw key and where the value starts, or -1.
func (t *textScan) key(i int) (string, int) {
	if t.peek(i) != '"' {
		return "", -1
	}
	end := jsontext.StringEnd(t.b, i+1)
	if end < 0 {
		return "", -1
	}
	j := skipSpaceString(t.s, end)
	if t.peek(j) != ':' {
		return "", -1
	}
	return t.s[i:end], skipSpaceString(t.s, j+1)
}

// next reads what follows a member or element ending at i: the start of the next one, or,
// after the closing bracket close, -1 with end just after it. ok is false for invalid text.
func (t *textScan) next(i int, close byte) (next, end int, ok bool) {
	i = skipSpaceString(t.s, i)
	switch t.peek(i) {
	case ',':
		return skipSpaceString(t.s, i+1), 0, true
	case close:
		return -1, i + 1, true
	}
	return 0, 0, false
}

// open reads the opening bracket at i of a container within depth others: the start of its
// first member or element, or, for an empty one, -1 with end just after it.
func (t *textScan) open(i, depth int, close byte) (first, end int, ok bool) {
	if depth >= MaxDepth {
		return 0, 0, false
	}
	i = skipSpaceString(t.s, i+1)
	if t.peek(i) == close {
		return -1, i + 1, true
	}
	return i, 0, true
}

// validValueEnd returns the index just after the JSON value that starts at b[i], nested
// within depth containers, or -1 if it is not valid or nests deeper than MaxDepth. It is
// jsontext.Validate's loop, stopping at the end of the value.
func validValueEnd(b []byte, i, depth int) int {
	switch {
	case i >= len(b):
		return -1
	case b[i] == '"':
		return jsontext.StringEnd(b, i+1)
	case b[i] != '{' && b[i] != '[':
		return jsontext.ScalarEnd(b, i)
	}
	// inArray has one bit per container open in the value: set for an array, clear for an
	// object.
	var inArray [MaxDepth/64 + 1]uint64
	const (
		wantValue  = iota // a value starts here (after whitespace)
		wantKey           // an object member's key starts here (after whitespace)
		afterValue        // a value ended: a separator or a closing bracket follow
	)
	d, state := 0, wantValue
	for {
		i = jsontext.SpaceEnd(b, i)
		if i == len(b) {
			return -1
		}
		switch state {
		case wantValue:
			state = afterValue
			switch c := b[i]; c {
			case '{', '[':
				if depth+d >= MaxDepth {
					return -1
				}
				bit := uint64(1) << (d % 64)
				if c == '[' {
					inArray[d/64] |= bit
				} else {
					inArray[d/64] &^= bit
				}
				d++
				i = jsontext.SpaceEnd(b, i+1)
				switch {
				case i < len(b) && (c == '{' && b[i] == '}' || c == '[' && b[i] == ']'):
					d-- // empty container
					i++
				case c == '{':
					state = wantKey
				default:
					state = wantValue
				}
			case '"':
				i = jsontext.StringEnd(b, i+1)
			default:
				i = jsontext.ScalarEnd(b, i)
			}
			if i < 0 {
				return -1
			}
		case wantKey:
			if b[i] != '"' {
				return -1
			}
			if i = jsontext.StringEnd(b, i+1); i < 0 {
				return -1
			}
			if i = jsontext.SpaceEnd(b, i); i == len(b) || b[i] != ':' {
				return -1
			}
			i++
			state = wantValue
		case afterValue:
			array := inArray[(d-1)/64]&(1<<((d-1)%64)) != 0
			switch c := b[i]; {
			case c == ',':
				i++
				if state = wantValue; !array {
					state = wantKey
				}
			case c == ']' && array, c == '}' && !array:
				i++
				d--
			default:
				return -1
			}
		}
		if d == 0 && state == afterValue {
			return i
		}
	}
}
