package check

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/tokensvc/assertion"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// Identity returns the check API identity of a session. Claims become lists of strings for
// claim/<name> criteria: a string is one value, a list gives its scalar elements, numbers and
// booleans are formatted, objects are kept as compact JSON, null is dropped.
func Identity(s *store.Session) *checkapi.Identity {
	id := &checkapi.Identity{Subject: s.Subject, Email: s.Email, Name: s.Name, Groups: s.Groups}
	if len(s.Claims) == 0 {
		return id
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(s.Claims, &raw); err != nil || len(raw) == 0 {
		return id
	}
	id.Claims = make(map[string][]string, len(raw))
	for k, v := range raw {
		if vals := claimValues(v); len(vals) > 0 {
			id.Claims[k] = vals
		}
	}
	return id
}

func claimValues(v json.RawMessage) []string {
	var list []json.RawMessage
	if len(v) > 0 && v[0] == '[' {
		if json.Unmarshal(v, &list) != nil {
			return nil
		}
		out := make([]string, 0, len(list))
		for _, e := range list {
			if s, ok := scalar(e); ok {
				out = append(out, s)
			}
		}
		return out
	}
	if s, ok := scalar(v); ok {
		return []string{s}
	}
	return nil
}

func scalar(v json.RawMessage) (string, bool) {
	if len(v) == 0 {
		return "", false
	}
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "", false
		}
		return s, true
	case 'n':
		return "", false
	case 't', 'f':
		var b bool
		if json.Unmarshal(v, &b) != nil {
			return "", false
		}
		return strconv.FormatBool(b), true
	case '{', '[':
		var b bytes.Buffer
		if json.Compact(&b, v) != nil {
			return "", false
		}
		return b.String(), true
	}
	var n json.Number
	if json.Unmarshal(v, &n) != nil {
		return "", false
	}
	return n.String(), true
}

func assertionIdentity(id *checkapi.Identity) assertion.Identity {
	return assertion.Identity{Subject: id.Subject, Email: id.Email, Name: id.Name, Groups: id.Groups}
}
