package jsontext

import (
	"slices"
	"testing"

	"github.com/tidwall/gjson"
)

func TestValue(t *testing.T) {
	t.Parallel()
	doc := Parse(` {"s":"a\u0062c","n":1e3,"i":-12,"big":1E400,"f":1.5,"t":true,"x":false,"z":null,` +
		`"o":{"k" : [ 1 , "2" ]},"s":"second","st\u0061r":"*","e":[],"nums":"42"} `)
	tests := []struct {
		name   string
		kind   Kind
		str    string
		i      int64
		nArray int
	}{
		{"s", String, "abc", 0, 1},
		{"n", Number, "1000", 1000, 1},
		{"i", Number, "-12", -12, 1},
		{"big", Number, "+Inf", 9223372036854775807, 1},
		{"f", Number, "1.5", 1, 1},
		{"t", True, "true", 1, 1},
		{"x", False, "false", 0, 1},
		{"z", Null, "", 0, 0},
		{"o", Object, `{"k" : [ 1 , "2" ]}`, 0, 1},
		{"star", String, "*", 0, 1},
		{"e", Array, "[]", 0, 0},
		{"nums", String, "42", 42, 1},
		{"absent", Missing, "", 0, 0},
	}
	for _, tt := range tests {
		v := doc.Get(tt.name)
		if v.Kind() != tt.kind || v.String() != tt.str || v.Int() != tt.i || len(v.Array()) != tt.nArray {
			t.Errorf("Get(%q) = %v %q %d %d, want %v %q %d %d", tt.name, v.Kind(), v.String(), v.Int(),
				len(v.Array()), tt.kind, tt.str, tt.i, tt.nArray)
		}
	}
	var elems []string
	for e := range doc.Get("o").Get("k").Elements() {
		elems = append(elems, e.String())
	}
	if !slices.Equal(elems, []string{"1", "2"}) {
		t.Errorf("elements = %q", elems)
	}
	var names []string
	for k := range doc.Members() {
		names = append(names, k.String())
	}
	if len(names) != 13 || names[9] != "s" || names[10] != "star" {
		t.Errorf("member names = %q", names)
	}
	if Parse(`[{"s":1}]`).Get("s").Exists() || Parse(`"{\"s\":1}"`).Get("s").Exists() {
		t.Error("Get found a member outside an object")
	}
}

func TestInt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  string
		want int64
	}{
		{`0`, 0},
		{`-0.9`, 0},
		{`9007199254740991`, 9007199254740991},
		{`9007199254740993`, 9007199254740993}, // beyond 2⁵³: read from the text
		{`-9223372036854775808`, -9223372036854775808},
		{`9223372036854775808`, 9223372036854775807},
		{`99999999999999999999`, 9223372036854775807},
		{`-99999999999999999999`, -9223372036854775808},
		{`1e19`, 9223372036854775807},
		{`-1e300`, -9223372036854775808},
		{`"12"`, 12},
		{`"-3.7"`, -3},
		{`"0x1p4"`, 16},
		{`"nope"`, 0},
		{`[1]`, 0},
	}
	for _, tt := range tests {
		if got := Parse(tt.raw).Int(); got != tt.want {
			t.Errorf("Int(%s) = %d, want %d", tt.raw, got, tt.want)
		}
		if oracle := gjson.Parse(tt.raw).Int(); oracle != tt.want {
			t.Errorf("gjson Int(%s) = %d, want %d", tt.raw, oracle, tt.want)
		}
	}
}

// FuzzValue_MatchesGJSON reads every value of a valid JSON text with Value and with gjson's
// Result and checks that they agree: kind, raw text, String, Int, Array, members and
// elements in order, and Get of each member name (the first duplicate wins). Seeds:
// testdata/fuzz/FuzzValue_MatchesGJSON and f.Add.
func FuzzValue_MatchesGJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"a":2,"b":[1,"x",{"c":null}],"d":"\u0041\ud800","e":1e400}`,
		` [ true , false , null , -0.5e-3 , "a\"b" ] `,
		`{"n":99999999999999999999,"m":"-12","k\u0061":{}}`,
		`"top"`, `12`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if Validate(body, MaxDepth) != Valid {
			return
		}
		compareValue(t, Parse(string(body)), gjson.ParseBytes(body), true)
	})
}

func compareValue(t *testing.T, v Value, r gjson.Result, top bool) {
	t.Helper()
	kinds := map[gjson.Type]Kind{gjson.Null: Null, gjson.False: False, gjson.True: True, gjson.Number: Number, gjson.String: String}
	want, ok := kinds[r.Type]
	switch {
	case !r.Exists():
		want = Missing
	case r.IsObject():
		want = Object
	case r.IsArray():
		want = Array
	case !ok:
		t.Fatalf("gjson type %v", r.Type)
	}
	if v.Kind() != want {
		t.Fatalf("%s: kind %v, gjson %v", v.Raw(), v.Kind(), want)
	}
	if !top && v.Raw() != r.Raw { // gjson keeps the whitespace after a top-level container
		t.Fatalf("raw %q, gjson %q", v.Raw(), r.Raw)
	}
	if v.Kind() != Object && v.Kind() != Array || !top {
		if v.String() != r.String() {
			t.Fatalf("%s: String %q, gjson %q", v.Raw(), v.String(), r.String())
		}
	}
	if v.Int() != r.Int() {
		t.Fatalf("%s: Int %d, gjson %d", v.Raw(), v.Int(), r.Int())
	}
	if len(v.Array()) != len(r.Array()) {
		t.Fatalf("%s: %d array elements, gjson %d", v.Raw(), len(v.Array()), len(r.Array()))
	}
	var keys, vals []Value
	for k, val := range v.Members() {
		keys, vals = append(keys, k), append(vals, val)
	}
	var elems []Value
	for e := range v.Elements() {
		elems = append(elems, e)
	}
	i := 0
	r.ForEach(func(k, val gjson.Result) bool {
		switch {
		case r.IsObject():
			if i >= len(keys) || keys[i].Raw() != k.Raw || keys[i].String() != k.Str {
				t.Fatalf("%s: member %d: name differs from gjson's %s", v.Raw(), i, k.Raw)
			}
			compareValue(t, vals[i], val, false)
			name := k.Str
			compareValue(t, v.Get(name), r.Get(gjson.Escape(name)), false)
		case r.IsArray():
			if i >= len(elems) {
				t.Fatalf("%s: fewer elements than gjson", v.Raw())
			}
			compareValue(t, elems[i], val, false)
		}
		i++
		return true
	})
	if r.IsObject() && i != len(keys) || r.IsArray() && i != len(elems) {
		t.Fatalf("%s: %d members/elements, gjson %d", v.Raw(), len(keys)+len(elems), i)
	}
}
