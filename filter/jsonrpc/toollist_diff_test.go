package jsonrpc

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/jsontext"
)

// diffFilter returns the filter that mode selects and the log of its Allow calls: bit 0
// AnyID, bit 1 the id 1, bit 2 ForcePrivate, bit 3 the id "a", bit 4 an Allow that also
// refuses every third call (the answer depends on the calls before). Names starting with
// "deny" are always refused.
func diffFilter(mode byte) (*ToolListFilter, *[]string) {
	var calls []string
	f := &ToolListFilter{AnyID: mode&1 != 0, ForcePrivate: mode&4 != 0}
	if mode&2 != 0 {
		f.IDs = append(f.IDs, IDKey("1"))
	}
	if mode&8 != 0 {
		f.IDs = append(f.IDs, IDKey(`"a"`))
	}
	f.Allow = func(name, raw string) bool {
		calls = append(calls, name+"\x00"+raw)
		if mode&16 != 0 && len(calls)%3 == 0 {
			return false
		}
		return !strings.HasPrefix(name, "deny")
	}
	return f, &calls
}

// checkMatchesOracle compares RewriteToolLists with oracleRewriteToolLists, the implementation
// before the one-pass reader: the same output, result, error and Allow calls, in the same
// order; and toolScan's verdict with jsontext.Validate's.
func checkMatchesOracle(t *testing.T, body []byte, mode byte) {
	t.Helper()
	f, calls := diffFilter(mode)
	of, oracleCalls := diffFilter(mode)
	out, res, err := RewriteToolLists(body, f)
	wantOut, wantRes, wantErr := oracleRewriteToolLists(body, of)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("mode %d, %q: error %v, oracle %v", mode, body, err, wantErr)
	case err != nil && err.Error() != wantErr.Error():
		t.Fatalf("mode %d, %q: error %q, oracle %q", mode, body, err, wantErr)
	case err != nil && !errors.Is(err, ErrToolList):
		t.Fatalf("mode %d, %q: error %v does not wrap ErrToolList", mode, body, err)
	case string(out) != string(wantOut) || (out == nil) != (wantOut == nil):
		t.Fatalf("mode %d, %q: output\n%q\noracle\n%q", mode, body, out, wantOut)
	case res != wantRes:
		t.Fatalf("mode %d, %q: %+v, oracle %+v", mode, body, res, wantRes)
	case strings.Join(*calls, "\x01") != strings.Join(*oracleCalls, "\x01"):
		t.Fatalf("mode %d, %q: Allow calls\n%q\noracle\n%q", mode, body, *calls, *oracleCalls)
	}
	if len(body) <= MaxToolListBytes {
		sc := toolScan{textScan: textScan{b: body, s: string(body)}}
		if got, want := sc.scan(), jsontext.Validate(body, MaxDepth) == jsontext.Valid; got != want {
			t.Fatalf("%q: toolScan says valid %v, jsontext.Validate %v", body, got, want)
		}
	}
}

// diffBodies are bodies whose reading differs in some detail: whitespace, escapes, the order
// of members, a problem before or after the tools, batches, depth.
func diffBodies() []string {
	tool := func(name string) string {
		return `{"name":"` + name + `","description":"d \"q\" \\ \u00e9","inputSchema":{"type":"object","properties":{"x":{"type":["string","null"],"n":-1.5e3}}}}`
	}
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[` + tool("a") + `,` + tool("deny1") + `,` + tool("b") + `,` + tool("c") + `],"nextCursor":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[ ` + tool("a") + ` , ` + tool("b") + ` ,` + tool("deny") + `, ` + tool("c") + "\n]}}",
		`{"jsonrpc":"2.0","id":1,"result":{"cacheScope":"shared","tools":[{"name":"a"},{"name":"deny"}],"ttlMs":5}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"deny"}],"cacheScope":"shared" }}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{ "tools" : [ ] , "x" : { } } }`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"deny"},{"name":"deny2"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"tools":[{"name":"deny"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"tool\u0073":[{"name":"deny"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"Tools":[],"tools":[{"name":"a"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"CacheScope":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"x":1,"x":2,"tools":[{"name":"a"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"x":1,"x":2}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"b","name":"c"},{"name":"d"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"Name":"b"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"title":"b"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":""}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"b\u0000"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":7}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},"b",{"name":"c"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"n\u0061me":"deny"},{"name":"a\u00e9"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":{"name":"a"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]},"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"Result":{"tools":[{"name":"a"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]},"error":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":[1]}`,
		`{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"deny"}]}}`,
		`{"jsonrpc":"2.0","id":"a","result":{"tools":[{"name":"deny"}]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","result":{"tools":[{"name":"deny"}]}}`,
		`{"jsonrpc":"2.0","result":{"tools":[{"name":"deny"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
		`[{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"deny"},{"name":"a"}]}},{"jsonrpc":"2.0","id":"a","result":{"tools":[{"name":"b"},{"name":"deny"}],"cacheScope":"s"}}]`,
		`[{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}},{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"b"}],"tools":1}}]`,
		`[{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}},5,{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"b"}]}}]`,
		`[{"jsonrpc":"2.0","id":3,"result":{"x":1}},{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"b"}]}}]`,
		`[]`, ` [ ] `, `"x"`, `5`, ``, ` `, `{}`, `[{}]`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","name":"b"}]}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}x`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","s":"\x"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","s":01}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","s":tru}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a",}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},]}}`,
		// At the depth limit and one beyond it: in a result, in a tool, in a batch.
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"x":` + deep(MaxDepth-2) + `}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"x":` + deep(MaxDepth-1) + `}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"x":` + deep(MaxDepth-1) + `}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","x":` + deep(MaxDepth-4) + `}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","x":` + deep(MaxDepth-3) + `}]}}`,
		`[{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","x":` + deep(MaxDepth-5) + `}]}}]`,
		`[{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","x":` + deep(MaxDepth-4) + `}]}}]`,
		`[{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","x":{"y":` + deep(MaxDepth-6) + `}}]}}]`,
		`[{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","x":{"y":` + deep(MaxDepth-5) + `}}]}}]`,
		deep(MaxDepth), deep(MaxDepth + 1),
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"deny","name":"a"}]},"x":` + deep(MaxDepth) + `}`,
	}
	var many strings.Builder
	many.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"tools":[`)
	for i := range 40 {
		if i > 0 {
			many.WriteByte(',')
		}
		many.WriteString(`{"name":"t` + strconv.Itoa(i) + `","k` + strconv.Itoa(i) + `":1`)
		for j := range 20 {
			many.WriteString(`,"m` + strconv.Itoa(j) + `":0`)
		}
		if i == 30 {
			many.WriteString(`,"m3":0`) // a duplicate beyond keySet's list
		}
		many.WriteByte('}')
	}
	many.WriteString(`]}}`)
	return append(bodies, many.String())
}

// TestRewriteToolLists_MatchesOracle compares the rewrite with the oracle on diffBodies and
// the tool lists of the benchmarks, in every filter mode.
func TestRewriteToolLists_MatchesOracle(t *testing.T) {
	t.Parallel()
	deep := 0
	for _, body := range diffBodies() {
		if jsontext.Validate([]byte(body), MaxDepth) == jsontext.TooDeep {
			deep++
		}
		for mode := range byte(32) {
			checkMatchesOracle(t, []byte(body), mode)
		}
	}
	if deep != 7 {
		t.Errorf("%d bodies too deep, want 7 (beyond the limit in each place)", deep)
	}
}

// FuzzRewriteToolLists_MatchesOracle compares RewriteToolLists with oracleRewriteToolLists
// (checkMatchesOracle) on any body and filter. Seeds: diffBodies and the corpora of the other
// fuzz targets of this package (testdata/fuzz).
func FuzzRewriteToolLists_MatchesOracle(f *testing.F) {
	for i, body := range diffBodies() {
		f.Add([]byte(body), byte(i))
	}
	for _, dir := range []string{"FuzzToolListRewriter", "FuzzParse", "FuzzParse_MatchesGJSONReading"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", dir, "*"))
		for i, name := range files {
			if body, ok := readCorpusBytes(name); ok {
				f.Add(body, byte(i))
			}
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, mode byte) {
		checkMatchesOracle(t, body, mode)
	})
}

// readCorpusBytes reads a corpus file of a fuzz target whose one argument is a []byte.
func readCorpusBytes(name string) ([]byte, bool) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, false
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "[]byte(") || !strings.HasSuffix(lines[1], ")") {
		return nil, false
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	return []byte(s), err == nil
}
