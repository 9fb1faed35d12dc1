package tooldigest

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/mcpmesh/gateway/shared/jsontext"
	"github.com/tidwall/gjson"
)

// digestGJSON is Digest as it was with gjson: the oracle of FuzzDigest_MatchesGJSON.
func digestGJSON(tool []byte) (string, error) {
	if !gjson.ValidBytes(tool) {
		return "", invalid("not JSON")
	}
	v := gjson.ParseBytes(tool)
	if !v.IsObject() {
		return "", invalid("a tool is not an object")
	}
	var picked [4]gjson.Result
	var has [4]bool
	var err error
	v.ForEach(func(k, val gjson.Result) bool {
		i := slices.Index(Members, k.Str)
		if i < 0 {
			return true
		}
		if has[i] {
			err = invalid("duplicate member " + k.Str)
			return false
		}
		picked[i], has[i] = val, true
		return true
	})
	if err != nil {
		return "", err
	}
	out := []byte{'{'}
	first := true
	for i, name := range Members { // already in JCS order
		if !has[i] {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = appendString(out, name)
		out = append(out, ':')
		if out, err = appendValueGJSON(out, picked[i], 0); err != nil {
			return "", err
		}
	}
	out = append(out, '}')
	sum := sha256.Sum256(out)
	return Prefix + hex.EncodeToString(sum[:]), nil
}

// canonicalGJSON is Canonical as it was with gjson.
func canonicalGJSON(b []byte) ([]byte, error) {
	if !gjson.ValidBytes(b) {
		return nil, invalid("not JSON")
	}
	return appendValueGJSON(nil, gjson.ParseBytes(b), 0)
}

func appendValueGJSON(dst []byte, v gjson.Result, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, invalid("nested deeper than " + strconv.Itoa(maxDepth))
	}
	switch {
	case v.IsObject():
		type member struct {
			key string
			val gjson.Result
		}
		var ms []member
		var err error
		v.ForEach(func(k, val gjson.Result) bool {
			if !validStringRaw(k.Raw) {
				err = invalid("member name is not valid UTF-8")
				return false
			}
			ms = append(ms, member{k.Str, val})
			return true
		})
		if err != nil {
			return nil, err
		}
		slices.SortFunc(ms, func(a, b member) int { return compareUTF16(a.key, b.key) })
		dst = append(dst, '{')
		for i, m := range ms {
			if i > 0 {
				if ms[i-1].key == m.key {
					return nil, invalid("duplicate member name")
				}
				dst = append(dst, ',')
			}
			dst = appendString(dst, m.key)
			dst = append(dst, ':')
			if dst, err = appendValueGJSON(dst, m.val, depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case v.IsArray():
		dst = append(dst, '[')
		var err error
		i := 0
		v.ForEach(func(_, el gjson.Result) bool {
			if i > 0 {
				dst = append(dst, ',')
			}
			i++
			dst, err = appendValueGJSON(dst, el, depth+1)
			return err == nil
		})
		if err != nil {
			return nil, err
		}
		return append(dst, ']'), nil
	}
	switch v.Type {
	case gjson.String:
		if !validStringRaw(v.Raw) {
			return nil, invalid("string is not valid UTF-8")
		}
		return appendString(dst, v.Str), nil
	case gjson.Number:
		f, err := strconv.ParseFloat(v.Raw, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, invalid("number out of range")
		}
		return append(dst, FormatNumber(f)...), nil
	case gjson.True:
		return append(dst, "true"...), nil
	case gjson.False:
		return append(dst, "false"...), nil
	case gjson.Null:
		return append(dst, "null"...), nil
	}
	return nil, invalid("unknown value")
}

// FuzzDigest_MatchesGJSON checks Digest and Canonical against the gjson-based versions they
// replaced: the same digest, canonical form or error for any text. Seeds:
// testdata/fuzz/FuzzDigest_MatchesGJSON and f.Add.
func FuzzDigest_MatchesGJSON(f *testing.F) {
	for _, s := range []string{
		`{"name":"t","description":"d","inputSchema":{"type":"object","b":[1,2.50,{"z":null}]},"annotations":{"x":true},"other":1}`,
		`{"name":"a","name":"b"}`, `{"name":"\ud800"}`, `{"n\u0061me":"x","inputSchema":{"a":1,"a":2}}`,
		`{"inputSchema":1e400}`, `["x"]`, `"s"`, `{"b":1,"\u00e9":2,"\ud83d\ude00":3,"\uffff":4}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tooDeep := jsontext.Validate(b, jsontext.MaxDepth) == jsontext.TooDeep
		d, err := Digest(b)
		want, wantErr := digestGJSON(b)
		if !tooDeep && (d != want || errString(err) != errString(wantErr)) {
			t.Fatalf("Digest(%q) = %q, %v; gjson-based %q, %v", b, d, err, want, wantErr)
		}
		c, err := Canonical(b)
		wantC, wantErr := canonicalGJSON(b)
		if !tooDeep && (string(c) != string(wantC) || errString(err) != errString(wantErr)) {
			t.Fatalf("Canonical(%q) = %q, %v; gjson-based %q, %v", b, c, err, wantC, wantErr)
		}
		if tooDeep && err == nil {
			t.Fatalf("Canonical(%q) accepted text nested deeper than jsontext.MaxDepth", b)
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
