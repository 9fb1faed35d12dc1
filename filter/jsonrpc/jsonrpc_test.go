package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/jsontext"
	"github.com/tidwall/gjson"
)

func TestParse_Accepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		body  string
		array bool
		want  []Message
	}{
		{"tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}`, false,
			[]Message{{Kind: KindRequest, Method: "tools/call", ID: "1", Tool: "search", Name: "search", Arguments: `{"q":"x"}`}}},
		{"tools/call without arguments", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"ping"}}`, false,
			[]Message{{Kind: KindRequest, Method: "tools/call", ID: `"a"`, Tool: "ping", Name: "ping"}}},
		{"tools/call with null arguments and _meta", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":1},"name":"ping","arguments":null}}`, false,
			[]Message{{Kind: KindRequest, Method: "tools/call", ID: "2", Tool: "ping", Name: "ping", Meta: `{"progressToken":1}`}}},
		{"escaped method and tool decode like the upstream", `{"jsonrpc":"2.0","id":3,"method":"tools\u002fcall","params":{"name":"del\u0065te_repo","arguments":{}}}`, false,
			[]Message{{Kind: KindRequest, Method: "tools/call", ID: "3", Tool: "delete_repo", Name: "delete_repo", Arguments: `{}`}}},
		{"escaped member names decode like the upstream", `{"jsonrpc":"2.0","id":3,"m\u0065thod":"tools\/call","par\u0061ms":{"n\u0061me":"x"}}`, false,
			[]Message{{Kind: KindRequest, Method: "tools/call", ID: "3", Tool: "x", Name: "x"}}},
		{"surrogate pair in the tool name", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"\ud83d\ude00"}}`, false,
			[]Message{{Kind: KindRequest, Method: "tools/call", ID: "3", Tool: "\U0001F600", Name: "\U0001F600"}}},
		{"unusual whitespace", " \r\n\t{ \"jsonrpc\" :\t\"2.0\" ,\r\n\"id\" : 7 , \"method\":\"tools/call\",\"params\":{ \"name\" : \"s\" , \"arguments\" : { } } }\n", false,
			[]Message{{Kind: KindRequest, Method: "tools/call", ID: "7", Tool: "s", Name: "s", Arguments: `{ }`}}},
		{"string id is echoed raw", `{"jsonrpc":"2.0","id":"a\"b\u0041","method":"tools/list"}`, false,
			[]Message{{Kind: KindRequest, Method: "tools/list", ID: `"a\"b\u0041"`}}},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, false,
			[]Message{{Kind: KindRequest, Method: "ping", ID: "null"}}},
		{"number id", `{"jsonrpc":"2.0","id":-1.5e3,"method":"ping"}`, false,
			[]Message{{Kind: KindRequest, Method: "ping", ID: "-1.5e3"}}},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, false,
			[]Message{{Kind: KindNotification, Method: "notifications/initialized"}}},
		{"initialize with params", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, false,
			[]Message{{Kind: KindRequest, Method: "initialize", ID: "0"}}},
		{"array params on another method", `{"jsonrpc":"2.0","id":0,"method":"x","params":[1,2]}`, false,
			[]Message{{Kind: KindRequest, Method: "x", ID: "0"}}},
		{"name in another method's params is not a tool", `{"jsonrpc":"2.0","id":0,"method":"prompts/get","params":{"name":"p"}}`, false,
			[]Message{{Kind: KindRequest, Method: "prompts/get", ID: "0", Name: "p"}}},
		{"resources/read names its uri", `{"jsonrpc":"2.0","id":0,"method":"resources/read","params":{"uri":"file:///a\u0062","_meta":{"k":1}}}`, false,
			[]Message{{Kind: KindRequest, Method: "resources/read", ID: "0", Name: "file:///ab", Meta: `{"k":1}`}}},
		{"2026-07-28 _meta is kept raw", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, false,
			[]Message{{Kind: KindRequest, Method: "tools/list", ID: "1", Meta: `{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`}}},
		{"response", `{"jsonrpc":"2.0","id":9,"result":{}}`, false,
			[]Message{{Kind: KindResponse, ID: "9"}}},
		{"error response", `{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}`, false,
			[]Message{{Kind: KindResponse, ID: `"x"`}}},
		{"unknown members are ignored", `{"jsonrpc":"2.0","id":1,"method":"ping","extra":{"method":"tools/call"}}`, false,
			[]Message{{Kind: KindRequest, Method: "ping", ID: "1"}}},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"result":1}]`, true,
			[]Message{
				{Kind: KindRequest, Method: "tools/call", ID: "1", Tool: "a", Name: "a"},
				{Kind: KindNotification, Method: "n"},
				{Kind: KindResponse, ID: "2"},
			}},
		{"batch of one", ` [ {"jsonrpc":"2.0","id":1,"method":"ping"} ] `, true,
			[]Message{{Kind: KindRequest, Method: "ping", ID: "1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := []byte(tt.body)
			b, err := Parse(body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if b.Array != tt.array || len(b.Messages) != len(tt.want) {
				t.Fatalf("got %+v", b)
			}
			for i := range b.Messages {
				// Params is the raw params text, checked against gjson's reading.
				if got, want := b.Messages[i].Params, gjson.Get(tt.body, paramsPath(tt.array, i)).Raw; got != want {
					t.Errorf("message %d params %q, want %q", i, got, want)
				}
				b.Messages[i].Params = ""
				if b.Messages[i] != tt.want[i] {
					t.Errorf("message %d = %+v, want %+v", i, b.Messages[i], tt.want[i])
				}
			}
			// The result does not alias the caller's buffer.
			for i := range body {
				body[i] = 'x'
			}
			if b.Messages[0] != tt.want[0] {
				t.Errorf("message changed with the body: %+v", b.Messages[0])
			}
			checkLikeUpstream(t, []byte(tt.body), b)
		})
	}
}

// paramsPath is the gjson path of the params of message i.
func paramsPath(array bool, i int) string {
	if array {
		return strconv.Itoa(i) + ".params"
	}
	return "params"
}

func TestParse_Refuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		kind   error
		reason string
		id     string
	}{
		{"empty", ``, ErrParse, "empty body", ""},
		{"whitespace", " \n\t", ErrParse, "empty body", ""},
		{"not JSON", `{"jsonrpc":"2.0",`, ErrParse, "invalid JSON", ""},
		{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"ping"} x`, ErrParse, "invalid JSON", ""},
		{"two values", `{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, ErrParse, "invalid JSON", ""},
		{"single quotes", `{'jsonrpc':'2.0'}`, ErrParse, "invalid JSON", ""},
		{"byte order mark", "\ufeff{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", ErrParse, "invalid JSON", ""},
		{"raw control character in a string", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\x01\"}}", ErrParse, "invalid JSON", ""},
		{"too deep", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), ErrParse, "nesting deeper than 1000", ""},
		{"number", `42`, ErrInvalidRequest, "not an object or an array", ""},
		{"string", `"tools/call"`, ErrInvalidRequest, "not an object or an array", ""},
		{"null", `null`, ErrInvalidRequest, "not an object or an array", ""},
		{"empty batch", `[ ]`, ErrInvalidRequest, "empty batch", ""},
		{"batch element not an object", `[{"jsonrpc":"2.0","id":1,"method":"ping"}, 1]`, ErrInvalidRequest, "message 1: message is not an object", ""},
		{"nested batch", `[[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}]]`, ErrInvalidRequest, "message 0: message is not an object", ""},
		{"no jsonrpc", `{"id":1,"method":"ping"}`, ErrInvalidRequest, `jsonrpc is not "2.0"`, "1"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, ErrInvalidRequest, `jsonrpc is not "2.0"`, "1"},
		{"jsonrpc number", `{"jsonrpc":2.0,"id":1,"method":"ping"}`, ErrInvalidRequest, `jsonrpc is not "2.0"`, "1"},
		{"method number", `{"jsonrpc":"2.0","id":1,"method":1}`, ErrInvalidRequest, "method is not a string", "1"},
		{"method null", `{"jsonrpc":"2.0","id":1,"method":null}`, ErrInvalidRequest, "method is not a string", "1"},
		{"method array", `{"jsonrpc":"2.0","id":1,"method":["tools/call"]}`, ErrInvalidRequest, "method is not a string", "1"},
		{"id object", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, ErrInvalidRequest, "id is not a string, number or null", ""},
		{"id boolean", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, ErrInvalidRequest, "id is not a string, number or null", ""},
		{"params string", `{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`, ErrInvalidRequest, "params is not an object or array", "1"},
		{"no method nor result", `{"jsonrpc":"2.0","id":1}`, ErrInvalidRequest, "no method, result or error", "1"},
		{"method and result", `{"jsonrpc":"2.0","id":1,"method":"tools/call","result":{}}`, ErrInvalidRequest, "method together with result or error", "1"},
		{"result and error", `{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, ErrInvalidRequest, "both result and error", "1"},
		{"response without id", `{"jsonrpc":"2.0","result":{}}`, ErrInvalidRequest, "response without id", ""},
		{"response with params", `{"jsonrpc":"2.0","id":1,"result":{},"params":{"name":"x"}}`, ErrInvalidRequest, "response with params", "1"},
		{"tools/call without params", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, ErrInvalidRequest, "tools/call params is not an object", "1"},
		{"tools/call array params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["x"]}`, ErrInvalidRequest, "tools/call params is not an object", "1"},
		{"tools/call without name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`, ErrInvalidRequest, "params.name is not a non-empty string", "1"},
		{"tools/call name number", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}`, ErrInvalidRequest, "params.name is not a non-empty string", "1"},
		{"tools/call empty name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":""}}`, ErrInvalidRequest, "params.name is not a non-empty string", "1"},
		{"tools/call arguments array", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":[1]}}`, ErrInvalidRequest, "params.arguments is not an object", "1"},
		{"tools/call arguments string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":"{}"}}`, ErrInvalidRequest, "params.arguments is not an object", "1"},
		// Duplicates: gjson would read the first, the upstream the last.
		{"duplicate method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"x"}}`, ErrInvalidRequest, "duplicate member method", ""},
		{"duplicate escaped method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","m\u0065thod":"tools/call","params":{"name":"x"}}`, ErrInvalidRequest, "duplicate member method", ""},
		{"duplicate params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok"},"params":{"name":"evil"}}`, ErrInvalidRequest, "duplicate member params", ""},
		{"duplicate id", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, ErrInvalidRequest, "duplicate member id", ""},
		{"duplicate jsonrpc", `{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"ping"}`, ErrInvalidRequest, "duplicate member jsonrpc", ""},
		{"duplicate result", `{"jsonrpc":"2.0","id":1,"result":1,"result":2}`, ErrInvalidRequest, "duplicate member result", ""},
		{"duplicate name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","name":"evil"}}`, ErrInvalidRequest, "duplicate member params.name", "1"},
		{"duplicate arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","arguments":{},"arguments":{"a":1}}}`, ErrInvalidRequest, "duplicate member params.arguments", "1"},
		{"duplicate prompt name", `{"jsonrpc":"2.0","id":0,"method":"prompts/get","params":{"name":"p","name":"q"}}`, ErrInvalidRequest, "duplicate member params.name", "0"},
		{"duplicate resource uri", `{"jsonrpc":"2.0","id":0,"method":"resources/read","params":{"uri":"a","uri":"b"}}`, ErrInvalidRequest, "duplicate member params.uri", "0"},
		{"duplicate _meta", `{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{"_meta":{},"_meta":{"x":1}}}`, ErrInvalidRequest, "duplicate member params._meta", "0"},
		{"upper-case _meta", `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"a","_META":{}}}`, ErrInvalidRequest, "differs from params._meta only by case", "0"},
		{"duplicate in a batch element", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list","method":"tools/call","params":{"name":"x"}}]`, ErrInvalidRequest, "message 1: duplicate member method", ""},
		// Case variants: Go's encoding/json would match them to the struct field.
		{"upper-case method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","METHOD":"tools/call","params":{"name":"x"}}`, ErrInvalidRequest, "differs from method only by case", ""},
		{"case variant alone", `{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"x"}}`, ErrInvalidRequest, "differs from method only by case", ""},
		{"long s in params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok"},"param\u017f":{"name":"evil"}}`, ErrInvalidRequest, "differs from params only by case", ""},
		{"upper-case name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","Name":"evil"}}`, ErrInvalidRequest, "differs from params.name only by case", "1"},
		{"upper-case id", `{"jsonrpc":"2.0","ID":1,"method":"ping"}`, ErrInvalidRequest, "differs from id only by case", ""},
		// Broken text that decoders repair differently.
		{"lone surrogate in the tool name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\ud800\u0062"}}`, ErrInvalidRequest, "params.name is not clean text", "1"},
		{"invalid UTF-8 in the tool name", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\xff\"}}", ErrInvalidRequest, "params.name is not clean text", "1"},
		{"replacement character in the tool name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\ufffd"}}`, ErrInvalidRequest, "params.name is not clean text", "1"},
		{"NUL in the tool name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete\u0000"}}`, ErrInvalidRequest, "params.name is not clean text", "1"},
		{"newline in the tool name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete\n"}}`, ErrInvalidRequest, "params.name is not clean text", "1"},
		{"DEL in the method", `{"jsonrpc":"2.0","id":1,"method":"tools/call\u007f"}`, ErrInvalidRequest, "method is not clean text", "1"},
		{"lone surrogate in the method", `{"jsonrpc":"2.0","id":1,"method":"tools/call\udc00"}`, ErrInvalidRequest, "method is not clean text", "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.body))
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("Parse = %v, want %v containing %q", err, tt.kind, tt.reason)
			}
			if e.ID != tt.id {
				t.Errorf("ID = %q, want %q", e.ID, tt.id)
			}
			wantCode := CodeInvalidRequest
			if tt.kind == ErrParse {
				wantCode = CodeParseError
			}
			if e.Code() != wantCode {
				t.Errorf("Code = %d, want %d", e.Code(), wantCode)
			}
		})
	}
}

// checkLikeUpstream decodes body with encoding/json the two ways an upstream in Go may
// (into a struct, matching names case-insensitively, and into maps), and checks it reads
// what Parse read.
func checkLikeUpstream(t *testing.T, body []byte, b Batch) {
	t.Helper()
	type params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	type message struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params json.RawMessage `json:"params"`
	}
	var raws []json.RawMessage
	if b.Array {
		if err := json.Unmarshal(body, &raws); err != nil {
			t.Fatalf("encoding/json refuses a body Parse accepted: %v", err)
		}
	} else {
		raws = []json.RawMessage{bytes.TrimSpace(body)}
	}
	if len(raws) != len(b.Messages) {
		t.Fatalf("encoding/json sees %d messages, Parse %d", len(raws), len(b.Messages))
	}
	for i, raw := range raws {
		m := b.Messages[i]
		var s message
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("message %d: encoding/json: %v", i, err)
		}
		var mm map[string]json.RawMessage
		if err := json.Unmarshal(raw, &mm); err != nil {
			t.Fatalf("message %d: encoding/json: %v", i, err)
		}
		var mapMethod string
		if r, ok := mm["method"]; ok {
			if err := json.Unmarshal(r, &mapMethod); err != nil {
				t.Fatalf("message %d: method: %v", i, err)
			}
		}
		if s.Method != m.Method || mapMethod != m.Method {
			t.Errorf("message %d: method %q (struct) %q (map), Parse %q", i, s.Method, mapMethod, m.Method)
		}
		if string(s.ID) != m.ID || string(mm["id"]) != m.ID {
			t.Errorf("message %d: id %s (struct) %s (map), Parse %s", i, s.ID, mm["id"], m.ID)
		}
		if m.Method != MethodToolsCall {
			continue
		}
		var p params
		if err := json.Unmarshal(s.Params, &p); err != nil {
			t.Fatalf("message %d: params: %v", i, err)
		}
		var pm map[string]json.RawMessage
		if err := json.Unmarshal(mm["params"], &pm); err != nil {
			t.Fatalf("message %d: params: %v", i, err)
		}
		var mapName string
		if err := json.Unmarshal(pm["name"], &mapName); err != nil {
			t.Fatalf("message %d: params.name: %v", i, err)
		}
		if p.Name != m.Tool || mapName != m.Tool {
			t.Errorf("message %d: tool %q (struct) %q (map), Parse %q", i, p.Name, mapName, m.Tool)
		}
		args := string(p.Arguments)
		if args == "null" {
			args = ""
		}
		if args != m.Arguments {
			t.Errorf("message %d: arguments %s, Parse %s", i, args, m.Arguments)
		}
	}
}

func TestErrorBodies(t *testing.T) {
	t.Parallel()
	type body struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	tests := []struct {
		name    string
		got     []byte
		id      string
		code    int
		message string
		data    string
	}{
		{"parse error", ParseErrorBody(), "null", -32700, "Parse error", ""},
		{"invalid request", InvalidRequestBody(`"a\"b"`), `"a\"b"`, -32600, "Invalid Request", ""},
		{"invalid request without id", InvalidRequestBody(""), "null", -32600, "Invalid Request", ""},
		{"denied", DeniedBody("12", "", "req-1"), "12", CodeDenied, MessageDenied, `{"request-id":"req-1"}`},
		{"denied with a message to escape", DeniedBody("-1.5", "tool \"x\"\n<is> not allowed", "r\"\\"), "-1.5", CodeDenied, "tool \"x\"\n<is> not allowed", `{"request-id":"r\"\\"}`},
		{"an id that is not an id", DeniedBody(`1,"x":2`, "m", ""), "null", CodeDenied, "m", ""},
		{"an object id", InvalidRequestBody(`{}`), "null", -32600, "Invalid Request", ""},
		{"true id", InvalidRequestBody(`true`), "null", -32600, "Invalid Request", ""},
		{"null id", InvalidRequestBody(`null`), "null", -32600, "Invalid Request", ""},
		{"appended", AppendErrorResponse([]byte("x"), "1", 5, "m", "")[1:], "1", 5, "m", ""},
	}
	for _, tt := range tests {
		if !json.Valid(tt.got) {
			t.Errorf("%s: invalid JSON %s", tt.name, tt.got)
			continue
		}
		var b body
		if err := json.Unmarshal(tt.got, &b); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var data string
		if b.Error.Data != nil {
			var buf bytes.Buffer
			_ = json.Compact(&buf, b.Error.Data)
			data = buf.String()
		}
		if b.JSONRPC != "2.0" || string(b.ID) != tt.id || b.Error.Code != tt.code || b.Error.Message != tt.message || data != tt.data {
			t.Errorf("%s: got %s", tt.name, tt.got)
		}
	}
}

func TestKindString(t *testing.T) {
	t.Parallel()
	for k, want := range map[Kind]string{KindRequest: "request", KindNotification: "notification", KindResponse: "response", 0: "unknown"} {
		if k.String() != want {
			t.Errorf("%d: %q", k, k.String())
		}
	}
}

func toolsCallBody(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"create_issue","_meta":{"progressToken":"p-1"},"arguments":{"repo":"octo/hello","labels":["bug","p1"],"body":"`)
	for i := 0; b.Len() < size-8; i++ {
		b.WriteString("line " + strconv.Itoa(i) + " \\n")
	}
	b.WriteString(`"}}}`)
	return b.Bytes()
}

func BenchmarkParse(b *testing.B) {
	bodies := map[string][]byte{
		"ToolsList": []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`),
		"1KiB":      toolsCallBody(1024),
		"4KiB":      toolsCallBody(4096),
	}
	for _, name := range []string{"ToolsList", "1KiB", "4KiB"} {
		body := bodies[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				batch, err := Parse(body)
				if err != nil || len(batch.Messages) != 1 {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestAppendString_AsGJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain text 123", "req-7f3a", `q"uote`, `back\\slash`, "<b>&amp;</b>", "tab\tnew\nline\x00\x1f", "\x7f", "é漢字😀", "bad \xff utf8", "sep\u2028\u2029", "~"} {
		if got, want := string(jsontext.AppendString([]byte("x"), s)), string(gjson.AppendJSONString([]byte("x"), s)); got != want {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

// Bodies with long strings everywhere — with escaped quotes, more than the former reader
// recorded (longStrings), in batches, after whitespace, as keys, and in params with a
// problem — are read as the reference reads them.
func TestParse_LongStringsReadAsReference(t *testing.T) {
	t.Parallel()
	long := func(c string) string { return strings.Repeat(c, jsontext.LongString) }
	esc := long("a") + `\"` + long("b") + `\\` + `\"x`
	call := func(args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":` + args + `}}`
	}
	many := `{`
	for i := range 12 {
		many += `"k` + strconv.Itoa(i) + `":"` + long("m") + `",`
	}
	many += `"n":[` + strings.Repeat(`"`+long("z")+`",`, 3) + `{"d":"` + esc + `"}]}`
	bodies := map[string]string{
		"argument":          call(`{"text":"` + long("x") + `"}`),
		"escaped quotes":    call(`{"text":"` + esc + `","more":"` + esc + `"}`),
		"many":              call(many),
		"long key":          call(`{"` + long("k") + `":"` + long("v") + `"}`),
		"long id":           `{"jsonrpc":"2.0","id":"` + long("i") + `","method":"ping"}`,
		"long tool":         `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + long("t") + `","arguments":{}}}`,
		"whitespace":        " \n\t " + call(`{"text":"`+esc+`"}`),
		"batch":             `[` + call(`{"a":"`+long("a")+`"}`) + `, ` + call(`{"b":["`+esc+`","`+long("c")+`"]}`) + `]`,
		"params read again": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"t":"` + long("x") + `"},"name":"a","name":"b"}}`,
		"case variant":      `{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"` + long("s") + `","Name":"` + long("n") + `"},"extra":"` + long("e") + `"}`,
		"long method":       `{"jsonrpc":"2.0","method":"` + long("m") + `","params":["` + long("p") + `"]}`,
	}
	for name, body := range bodies {
		got, err := Parse([]byte(body))
		want, wantErr := refParse([]byte(body))
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%s: error %v, reference error %v", name, err, wantErr)
		}
		if err != nil {
			if e, w := err.(*Error), wantErr.(*Error); e.Err != w.Err || e.Index != w.Index || e.ID != w.ID || e.Reason != w.Reason {
				t.Fatalf("%s: error %+v, reference %+v", name, e, w)
			}
			continue
		}
		if got.Array != want.Array || !slices.Equal(got.Messages, want.Messages) {
			t.Fatalf("%s: %+v, reference %+v", name, got, want)
		}
	}
}
