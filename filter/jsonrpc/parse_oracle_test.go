package jsonrpc

import (
	"slices"
	"strconv"
	"testing"
	"unsafe"

	"github.com/mcpmesh/gateway/shared/jsontext"
)

// The request reader as it was before the one-pass reader (reqscan.go): the whole body
// validated first by jsontext.ValidateRecording, then read a second time by readMembers,
// jumping over the long strings the validation recorded. FuzzParse_MatchesTwoPassReader
// compares the two: the same messages, or the same error, reason included.

// oldParse is parse as it was: ParseOwned when owned, Parse otherwise.
func oldParse(dst []Message, body []byte, owned bool) (Batch, error) {
	first := -1
	for i, c := range body {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			first = i
			break
		}
	}
	if first < 0 {
		return Batch{}, parseError("empty body")
	}
	l := &longStrings{first: first, textLen: len(body) - first}
	switch jsontext.ValidateRecording(body, MaxDepth, &l.rec) {
	case jsontext.TooDeep:
		return Batch{}, parseError("nesting deeper than " + strconv.Itoa(MaxDepth))
	case jsontext.Invalid:
		return Batch{}, parseError("invalid JSON")
	}
	// The body is valid JSON from here on; every string of the result shares its text (or
	// one copy of it).
	var text string
	if owned {
		text = unsafe.String(&body[first], len(body)-first)
	} else {
		text = string(body[first:])
	}
	switch text[0] {
	case '{':
		m, _, err := oldParseMessage(text, -1, l)
		if err != nil {
			return Batch{}, err
		}
		return Batch{Messages: append(dst, m)}, nil
	case '[':
		b := Batch{Array: true, Messages: dst}
		for i := skipSpaceString(text, 1); i < len(text) && text[i] != ']'; {
			m, n, err := oldParseMessage(text[i:], len(b.Messages), l)
			if err != nil {
				return Batch{}, err
			}
			b.Messages = append(b.Messages, m)
			if i = skipSpaceString(text, i+n); i < len(text) && text[i] == ',' {
				i = skipSpaceString(text, i+1)
			}
		}
		if len(b.Messages) == 0 {
			return Batch{}, &Error{Err: ErrInvalidRequest, Index: -1, Reason: "empty batch"}
		}
		return b, nil
	}
	return Batch{}, &Error{Err: ErrInvalidRequest, Index: -1, Reason: "body is not an object or an array"}
}

// oldParseMessage reads the message that starts s (a batch element may be followed by more
// text) and returns it with the length of its text.
func oldParseMessage(s string, index int, l *longStrings) (Message, int, error) {
	invalid := func(id, reason string) (Message, int, error) {
		return Message{}, 0, &Error{Err: ErrInvalidRequest, Index: index, ID: id, Reason: reason}
	}
	if !isObject(s) {
		return invalid("", "message is not an object")
	}
	var f [numMessageFields]string
	inParams := nestedMembers{index: fParams, names: toolFields[:], prefix: "params."}
	n, reason := readMembers(s, messageFields[:], f[:], "", &inParams, l)
	if reason != "" {
		return invalid("", reason)
	}
	var m Message
	if id := f[fID]; id != "" {
		if !isString(id) && !isNumber(id) && !isNull(id) {
			return invalid("", "id is not a string, number or null")
		}
		m.ID = id
	}
	if v := f[fJSONRPC]; !isString(v) || decodeString(v) != "2.0" {
		return invalid(m.ID, `jsonrpc is not "2.0"`)
	}
	hasResult := f[fResult] != "" || f[fError] != ""
	method := f[fMethod]
	if method == "" {
		switch {
		case !hasResult:
			return invalid(m.ID, "no method, result or error")
		case f[fResult] != "" && f[fError] != "":
			return invalid(m.ID, "both result and error")
		case m.ID == "":
			return invalid("", "response without id")
		case f[fParams] != "":
			return invalid(m.ID, "response with params")
		}
		m.Kind = KindResponse
		return m, n, nil
	}
	if !isString(method) {
		return invalid(m.ID, "method is not a string")
	}
	if hasResult {
		return invalid(m.ID, "method together with result or error")
	}
	m.Method = decodeString(method)
	if !cleanText(m.Method) {
		return invalid(m.ID, "method is not clean text")
	}
	m.Kind = KindNotification
	if m.ID != "" {
		m.Kind = KindRequest
	}
	params := f[fParams]
	if params != "" && !isNull(params) && !isObject(params) && !isArray(params) {
		return invalid(m.ID, "params is not an object or array")
	}
	m.Params = params
	if m.Method != MethodToolsCall {
		if !isObject(params) {
			return m, n, nil
		}
		// readMembers has read the members of params already.
		if inParams.reason != "" {
			return invalid(m.ID, inParams.reason)
		}
		p := &inParams.out
		if isObject(p[fMeta]) {
			m.Meta = p[fMeta]
		}
		switch m.Method {
		case MethodResourcesRead:
			if isString(p[fURI]) {
				m.Name = decodeString(p[fURI])
			}
		case MethodPromptsGet:
			if isString(p[fName]) {
				m.Name = decodeString(p[fName])
			}
		}
		return m, n, nil
	}
	if !isObject(params) {
		return invalid(m.ID, "tools/call params is not an object")
	}
	// readMembers has read the members of params already.
	if inParams.reason != "" {
		return invalid(m.ID, inParams.reason)
	}
	p := &inParams.out
	if isObject(p[fMeta]) {
		m.Meta = p[fMeta]
	}
	if name := p[fName]; isString(name) {
		m.Tool = decodeString(name)
	}
	if m.Tool == "" {
		return invalid(m.ID, "tools/call params.name is not a non-empty string")
	}
	if !cleanText(m.Tool) {
		return invalid(m.ID, "tools/call params.name is not clean text")
	}
	m.Name = m.Tool
	switch args := p[fArguments]; {
	case isObject(args):
		m.Arguments = args
	case args != "" && !isNull(args):
		return invalid(m.ID, "tools/call params.arguments is not an object")
	}
	return m, n, nil
}

// FuzzParse_MatchesTwoPassReader checks that Parse and ParseOwned read every body exactly as
// the two-pass reader they replaced (oldParse) does: the same batch, or the same error —
// kind, code, index, id and reason.
// Seeds: testdata/fuzz/FuzzParse_MatchesTwoPassReader.
func FuzzParse_MatchesTwoPassReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := Parse(body)
		want, wantErr := oldParse(nil, body, false)
		compareParse(t, body, got, err, want, wantErr)
		var one, oneOld [1]Message
		got, err = ParseOwned(one[:], slices.Clone(body))
		want, wantErr = oldParse(oneOld[:0], slices.Clone(body), true)
		compareParse(t, body, got, err, want, wantErr)
	})
}

func compareParse(t *testing.T, body []byte, got Batch, err error, want Batch, wantErr error) {
	t.Helper()
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("Parse(%q): error %v, two-pass reader's error %v", body, err, wantErr)
	}
	if err != nil {
		e, w := err.(*Error), wantErr.(*Error)
		if *e != *w || e.Code() != w.Code() {
			t.Fatalf("Parse(%q): error %+v, two-pass reader's %+v", body, e, w)
		}
		return
	}
	if got.Array != want.Array || !slices.Equal(got.Messages, want.Messages) {
		t.Fatalf("Parse(%q) = %+v, two-pass reader's %+v", body, got, want)
	}
}

// plainKeys holds every name of messageFields and toolFields but "arguments" (longer than a
// word) in the slot plainKeySlot gives its word, with its index and level, and nothing else.
func TestPlainKeys(t *testing.T) {
	t.Parallel()
	n := 0
	for _, level := range []struct {
		names   []string
		message bool
	}{{messageFields[:], true}, {toolFields[:], false}} {
		for i, name := range level.names {
			if name == "arguments" {
				continue
			}
			w := uint64(len(name)+1) << 56
			for j := range len(name) {
				w |= uint64(name[j]) << (8 * j)
			}
			if e := plainKeys[plainKeySlot(w)]; e.word != w || int(e.field) != i || e.message != level.message {
				t.Errorf("%s: slot %+v", name, e)
			}
			n++
		}
	}
	for _, e := range plainKeys {
		if e.word != 0 {
			n--
		}
	}
	if n != 0 {
		t.Errorf("plainKeys holds %d words more than the names", -n)
	}
}

// Keys and values read a word at a time by reqScan.members — every name at both levels,
// names followed by bytes no valid key holds, escaped names, short strings and integers at
// the end of the text — are read as the two-pass reader reads them.
func TestParse_WordAtATimeAsTwoPassReader(t *testing.T) {
	t.Parallel()
	var bodies []string
	for _, name := range append(messageFields[:], toolFields[:]...) {
		for _, key := range []string{name, name + "\x00", name + "\\u0000", name[:len(name)-1], name + "\x1f", name[:1] + `\"` + name[1:], "\\u00" + strconv.FormatInt(int64(name[0]), 16) + name[1:], name + "x"} {
			k := `"` + key + `"`
			bodies = append(bodies,
				`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t",`+k+`:"v"}}`,
				`{"jsonrpc":"2.0","id":1,"method":"prompts/get",`+k+`:{"name":"p"}}`,
				`{`+k+`:"2.0","id":7,"method":"x"}`,
				`{`+k+`:1}`, `{`+k+`:"`, `{`+k, `[{`+k+`:12345678901}]`)
		}
	}
	for _, v := range []string{`"2.0"`, `"2.0\"`, `"2.\u0030"`, "\"2.0\x00\"", "\"\xc3\xa9\"", "\"\xff\x80\x1f\"", "\"\xff\xfe\"", "\"\xe2\x80\xa8\\n\"", `"1234567"`, `"12345678"`, `""`, `1`, `10`, `1.5`, `1e3`, `1E3`, `12`, `1x`, `01`} {
		bodies = append(bodies, `{"jsonrpc":`+v+`,"id":`+v+`,"method":"m"}`, `{"jsonrpc":"2.0","method":"m","id":`+v, `{"jsonrpc":"2.0","method":"m","id":`+v+`}`)
	}
	for _, body := range bodies {
		got, err := Parse([]byte(body))
		want, wantErr := oldParse(nil, []byte(body), false)
		compareParse(t, []byte(body), got, err, want, wantErr)
	}
}
