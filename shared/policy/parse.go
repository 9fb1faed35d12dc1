package policy

import (
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Errors wrapped by a [ParseError], for callers that branch on the kind of mistake.
var (
	// ErrUnknownKey reports a key that is neither allow nor deny in a rule, or not an
	// operator in a block.
	ErrUnknownKey = errors.New("unknown key")
	// ErrUnknownCriterion reports a criterion name the language does not have.
	ErrUnknownCriterion = errors.New("unknown criterion")
	// ErrUnknownOperator reports a matcher operator the criterion does not have.
	ErrUnknownOperator = errors.New("unknown operator")
	// ErrWrongType reports a value of the wrong type.
	ErrWrongType = errors.New("wrong type")
	// ErrInvalidValue reports a value of the right type that is not allowed (an empty
	// string or list, accept: false, nesting too deep).
	ErrInvalidValue = errors.New("invalid value")
)

// ParseError is the error returned by [Parse]. Path locates the offending value, starting
// with "policy" (for example "policy.deny.and[0].mcp_tool"); a caller that parses the
// policy of a route can prefix it with the route's own path.
type ParseError struct {
	Path string
	Err  error
}

func (e *ParseError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns the underlying error, one of the Err… values of this package wrapped
// with details.
func (e *ParseError) Unwrap() error { return e.Err }

// maxDepth bounds the nesting of blocks, so that evaluation cannot exhaust the stack.
const maxDepth = 32

// Parse parses the value of a route's `policy` key as decoded from YAML or JSON: one rule
// (a map with `allow` and/or `deny`), a list of rules, or nil. A nil value or an empty list
// gives a Policy that allows nothing. Errors are of type *ParseError.
func Parse(v any) (*Policy, error) { return ParseKey("policy", v) }

// ParseKey is Parse for a policy written under another key (policy_shadow): error paths
// start with key.
func ParseKey(key string, v any) (*Policy, error) {
	p := &Policy{}
	if v == nil {
		return p, nil
	}
	if list, ok := asList(v); ok {
		for i, item := range list {
			r, err := parseRule(indexPath(key, i), item)
			if err != nil {
				return nil, err
			}
			p.rules = append(p.rules, r)
		}
		return p, nil
	}
	r, err := parseRule(key, v)
	if err != nil {
		return nil, err
	}
	p.rules = append(p.rules, r)
	return p, nil
}

func parseRule(path string, v any) (rule, error) {
	m, err := asMap(path, v)
	if err != nil {
		return rule{}, err
	}
	var r rule
	for _, k := range sortedKeys(m) {
		var n *node
		switch k {
		case "allow", "deny":
			n, err = parseBlock(path+"."+k, m[k], 1)
		default:
			return rule{}, errorf(path, ErrUnknownKey, strconv.Quote(k)+" (want allow or deny)")
		}
		if err != nil {
			return rule{}, err
		}
		if k == "allow" {
			r.allow = n
		} else {
			r.deny = n
		}
	}
	return r, nil
}

func isOperator(k string) bool { _, ok := parseOperatorName(k); return ok }

func parseOperatorName(k string) (opKind, bool) {
	switch k {
	case "and":
		return opAnd, true
	case "or":
		return opOr, true
	case "not":
		return opNone, true
	case "nor":
		return opNotAll, true
	}
	return 0, false
}

// parseBlock parses a map of operators. An empty map gives nil: a block that never holds.
func parseBlock(path string, v any, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, errorf(path, ErrInvalidValue, "nesting deeper than "+strconv.Itoa(maxDepth)+" blocks")
	}
	m, err := asMap(path, v)
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, nil
	}
	block := &node{op: opAnd}
	for _, k := range sortedKeys(m) {
		op, ok := parseOperatorName(k)
		if !ok {
			return nil, errorf(path, ErrUnknownKey, strconv.Quote(k)+" (want and, or, not or nor)")
		}
		child, err := parseOperator(path+"."+k, op, m[k], depth)
		if err != nil {
			return nil, err
		}
		block.children = append(block.children, child)
	}
	if len(block.children) == 1 {
		return &block.children[0], nil
	}
	return block, nil
}

func parseOperator(path string, op opKind, v any, depth int) (node, error) {
	list, ok := asList(v)
	if !ok {
		return node{}, wrongType(path, "a list", v)
	}
	if len(list) == 0 {
		return node{}, errorf(path, ErrInvalidValue, "empty list")
	}
	n := node{op: op, children: make([]node, 0, len(list))}
	for i, item := range list {
		ipath := indexPath(path, i)
		m, err := asMap(ipath, item)
		if err != nil {
			return node{}, err
		}
		var child *node
		switch {
		case len(m) > 0 && allOperators(m):
			child, err = parseBlock(ipath, m, depth+1)
		case len(m) == 1:
			var c criterion
			for k, cv := range m {
				c, err = parseCriterion(ipath+"."+k, k, cv)
			}
			child = &node{op: opCriterion, crit: c}
		default:
			err = errorf(ipath, ErrInvalidValue, "want one criterion or a block of operators, got "+strconv.Itoa(len(m))+" keys")
		}
		if err != nil {
			return node{}, err
		}
		n.children = append(n.children, *child)
	}
	return n, nil
}

func allOperators(m map[string]any) bool {
	for k := range m {
		if !isOperator(k) {
			return false
		}
	}
	return true
}

func parseCriterion(path, name string, v any) (criterion, error) {
	switch name {
	case "accept", "authenticated_user":
		b, ok := v.(bool)
		if !ok {
			return criterion{}, wrongType(path, "true", v)
		}
		if !b {
			return criterion{}, errorf(path, ErrInvalidValue, "must be true")
		}
		if name == "accept" {
			return criterion{kind: critAccept}, nil
		}
		return criterion{kind: critAuthenticatedUser}, nil
	case "email", "domain", "user", "mcp_tool", "client_id":
		kind := critEmail
		switch name {
		case "client_id":
			kind = critClientID
		case "domain":
			kind = critDomain
		case "user":
			kind = critUser
		case "mcp_tool":
			kind = critMCPTool
		}
		m, err := parseMatcher(path, v, kind == critEmail || kind == critDomain)
		if err != nil {
			return criterion{}, err
		}
		return criterion{kind: kind, match: m}, nil
	case "groups":
		m, err := asMap(path, v)
		if err != nil {
			return criterion{}, err
		}
		if len(m) == 0 {
			return criterion{}, errorf(path, ErrInvalidValue, "empty matcher (want has)")
		}
		for _, k := range sortedKeys(m) {
			if k != "has" {
				return criterion{}, errorf(path, ErrUnknownOperator, strconv.Quote(k)+" (want has)")
			}
		}
		s, err := nonEmptyString(path+".has", m["has"])
		if err != nil {
			return criterion{}, err
		}
		return criterion{kind: critGroups, name: s}, nil
	}
	if claim, ok := strings.CutPrefix(name, "claim/"); ok {
		if claim == "" {
			return criterion{}, errorf(path, ErrInvalidValue, "empty claim name")
		}
		var values []string
		if list, ok := asList(v); ok {
			if len(list) == 0 {
				return criterion{}, errorf(path, ErrInvalidValue, "empty list")
			}
			for i, item := range list {
				s, ok := ClaimString(item)
				if !ok {
					return criterion{}, wrongType(indexPath(path, i), "a string, boolean or number", item)
				}
				values = append(values, s)
			}
		} else {
			s, ok := ClaimString(v)
			if !ok {
				return criterion{}, wrongType(path, "a string, boolean, number or a list of them", v)
			}
			values = []string{s}
		}
		return criterion{kind: critClaim, name: claim, values: values}, nil
	}
	return criterion{}, errorf(path, ErrUnknownCriterion, strconv.Quote(name))
}

func parseMatcher(path string, v any, fold bool) (matcher, error) {
	m, err := asMap(path, v)
	if err != nil {
		return matcher{}, err
	}
	if len(m) == 0 {
		return matcher{}, errorf(path, ErrInvalidValue, "empty matcher")
	}
	mt := matcher{fold: fold}
	norm := func(s string) string {
		if fold {
			return toLowerASCII(s)
		}
		return s
	}
	for _, k := range sortedKeys(m) {
		op, ok := parseMatchOp(k)
		if !ok {
			return matcher{}, errorf(path, ErrUnknownOperator, strconv.Quote(k))
		}
		t := matchTerm{op: op}
		if op == matchIn || op == matchNotIn {
			list, ok := asList(m[k])
			if !ok {
				return matcher{}, wrongType(path+"."+k, "a list of strings", m[k])
			}
			t.list = make([]string, 0, len(list))
			for i, item := range list {
				s, err := nonEmptyString(indexPath(path+"."+k, i), item)
				if err != nil {
					return matcher{}, err
				}
				t.list = append(t.list, norm(s))
			}
		} else {
			s, err := nonEmptyString(path+"."+k, m[k])
			if err != nil {
				return matcher{}, err
			}
			t.s = norm(s)
		}
		mt.terms = append(mt.terms, t)
	}
	return mt, nil
}

// ClaimString returns the text form in which a claim value is compared: strings as they
// are, booleans as "true" or "false", integral numbers in decimal ("42"), other finite
// numbers in their shortest decimal form ("1.5"). ok is false for other values (nil, maps,
// lists, NaN, infinities). Whoever fills [Input.Claims] should convert values with it.
func ClaimString(v any) (s string, ok bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case int:
		return strconv.FormatInt(int64(x), 10), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case uint:
		return strconv.FormatUint(uint64(x), 10), true
	case float64:
		return formatFloat(x)
	case float32:
		return formatFloat(float64(x))
	case json.Number:
		if f, err := x.Float64(); err == nil {
			if i, err := x.Int64(); err == nil {
				return strconv.FormatInt(i, 10), true
			}
			return formatFloat(f)
		}
	}
	return "", false
}

func formatFloat(f float64) (string, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", false
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10), true
	}
	return strconv.FormatFloat(f, 'f', -1, 64), true
}

func nonEmptyString(path string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", wrongType(path, "a string", v)
	}
	if s == "" {
		return "", errorf(path, ErrInvalidValue, "empty string")
	}
	return s, nil
}

// asMap accepts the map types produced by encoding/json and yaml.v3.
func asMap(path string, v any) (map[string]any, error) {
	switch m := v.(type) {
	case map[string]any:
		return m, nil
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, x := range m {
			s, ok := k.(string)
			if !ok {
				return nil, wrongType(path, "a map with string keys", v)
			}
			out[s] = x
		}
		return out, nil
	}
	return nil, wrongType(path, "a map", v)
}

func asList(v any) ([]any, bool) {
	switch l := v.(type) {
	case []any:
		return l, true
	case []string:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

// sortedKeys returns m's keys in order. It sorts with sort.Sort, not slices.Sorted: the filter
// links sort's one copy of the algorithm, where each generic instantiation adds its own.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.StringSlice(keys).Sort() // not sort.Strings: that is slices.Sort, a generic instantiation
	return keys
}

func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// errorf returns the ParseError at path of the given kind, detail saying more.
func errorf(path string, kind error, detail string) error {
	return &ParseError{Path: path, Err: &detailError{kind, detail}}
}

// detailError is an error of a kind (errors.Is finds it) with a detail after its message.
// It spares the wasm filter fmt.Errorf and the reflection-based printing it links.
type detailError struct {
	kind   error
	detail string
}

func (e *detailError) Error() string { return e.kind.Error() + " " + e.detail }
func (e *detailError) Unwrap() error { return e.kind }

func wrongType(path, want string, v any) error {
	return errorf(path, ErrWrongType, "(want "+want+", got "+typeName(v)+")")
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int32, int64, uint, uint64, float32, float64, json.Number:
		return "a number"
	case map[string]any, map[any]any:
		return "a map"
	case []any, []string:
		return "a list"
	}
	return "an unsupported value"
}
