package jsonrpc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzToolListRewriter checks RewriteToolLists against encoding/json: it never panics; what it
// accepts encoding/json accepts; its output is valid JSON; every result that answers id 1 (by
// value) lists, in order, exactly the tools of the input whose name the filter allows ("deny…"
// names are refused), and nothing else of the input changes. Seeds: testdata/fuzz/
// FuzzToolListRewriter and the ones below.
func FuzzToolListRewriter(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"deny"},{"name":"b"}],"nextCursor":"x"}}`,
		`[{"jsonrpc":"2.0","id":1.0,"result":{"tools":[{"name":"deny","inputSchema":{}}],"cacheScope":"shared"}},{"jsonrpc":"2.0","id":2,"result":{}}]`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","name":"deny"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"n\u0061me":"deny"}]}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`,
		` {"id":1e0,"result":{"tools":[ {"name":"deny"} , {"name":"ok"} ]}} `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAnyID(t, body)
		filter := &ToolListFilter{IDs: []string{IDKey("1")}, Allow: func(name, _ string) bool { return !strings.HasPrefix(name, "deny") }}
		out, res, err := RewriteToolLists(body, filter)
		if err != nil {
			if !errors.Is(err, ErrToolList) {
				t.Fatalf("error %v does not wrap ErrToolList", err)
			}
			if eb := ToolListErrorBody("1", "r"); !json.Valid(eb) {
				t.Fatalf("invalid error body %s", eb)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted what encoding/json refuses: %q", body)
		}
		if !json.Valid(out) {
			t.Fatalf("output is not JSON: %q", out)
		}
		var in, got any
		if json.Unmarshal(body, &in) != nil {
			return // valid, but out of encoding/json's range (a number like 1e400)
		}
		if json.Unmarshal(out, &got) != nil {
			t.Fatal("encoding/json cannot decode the output")
		}
		lists := 0
		want := expectFiltered(in, &lists)
		if lists != res.Lists {
			t.Fatalf("rewrote %d lists, encoding/json finds %d", res.Lists, lists)
		}
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got)
		if string(wb) != string(gb) {
			t.Fatalf("output\n%s\nwant\n%s", gb, wb)
		}
	})
}

// expectFiltered applies the filter's rule to a body decoded by encoding/json.
func expectFiltered(v any, lists *int) any {
	if arr, ok := v.([]any); ok {
		for i := range arr {
			arr[i] = expectMessage(arr[i], lists)
		}
		return arr
	}
	return expectMessage(v, lists)
}

func expectMessage(v any, lists *int) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if _, isReq := m["method"]; isReq {
		return m
	}
	// Which ids answer request 1 is IDKey's rule (TestIDKey); here the id is re-encoded by
	// encoding/json, so that escapes and number spellings are encoding/json's.
	rawID, err := json.Marshal(m["id"])
	if m["id"] == nil || err != nil || IDKey(string(rawID)) != IDKey("1") {
		return m
	}
	r, ok := m["result"].(map[string]any)
	if !ok {
		return m
	}
	tools, _ := r["tools"].([]any)
	kept := []any{}
	for _, tl := range tools {
		if name, _ := tl.(map[string]any)["name"].(string); !strings.HasPrefix(name, "deny") {
			kept = append(kept, tl)
		}
	}
	r["tools"] = kept
	if _, has := r["cacheScope"]; has {
		r["cacheScope"] = CacheScopePrivate
	}
	*lists++
	return m
}

// checkAnyID checks the event-stream GET mode: whatever it passes, encoding/json finds no
// refused tool in any result with tools, and its output is valid JSON when the input was.
func checkAnyID(t *testing.T, body []byte) {
	f := &ToolListFilter{AnyID: true, Allow: func(name, _ string) bool { return !strings.HasPrefix(name, "deny") }}
	out, _, err := RewriteToolLists(body, f)
	if err != nil {
		return
	}
	var v any
	if json.Unmarshal(out, &v) != nil {
		if json.Valid(body) && json.Unmarshal(body, new(any)) == nil {
			t.Fatalf("AnyID: output %q of valid input is not JSON", out)
		}
		return
	}
	msgs, ok := v.([]any)
	if !ok {
		msgs = []any{v}
	}
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if _, isReq := mm["method"]; isReq {
			continue
		}
		r, _ := mm["result"].(map[string]any)
		tools, _ := r["tools"].([]any)
		for _, tl := range tools {
			if name, _ := tl.(map[string]any)["name"].(string); strings.HasPrefix(name, "deny") {
				t.Fatalf("AnyID: refused tool %q passed in %q", name, out)
			}
		}
	}
}
