package filtertest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// accessLogFormat is the access log format documented in docs/operations-records.md.
const accessLogFormat = `"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%" %RESPONSE_CODE% request_id=%FILTER_STATE(wasm.mcp_gateway.request_id:PLAIN)% user=%FILTER_STATE(wasm.mcp_gateway.user:PLAIN)% mcp_method=%FILTER_STATE(wasm.mcp_gateway.mcp_method:PLAIN)% mcp_tool=%FILTER_STATE(wasm.mcp_gateway.mcp_tool:PLAIN)% allow=%FILTER_STATE(wasm.mcp_gateway.allow:PLAIN)% reasons=%FILTER_STATE(wasm.mcp_gateway.reasons:PLAIN)%`

// TestAccessLog_PrintsTheDecision renders the documented access log format for real streams
// through filter.wasm: the decision the filter published with proxy_set_property is printed
// through %FILTER_STATE(wasm.…:PLAIN)%, at the default wasm log level (warning) too, where no
// authorization record is written.
func TestAccessLog_PrintsTheDecision(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations-records.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), accessLogFormat) {
		t.Fatalf("docs/operations-records.md does not document the format %s", accessLogFormat)
	}
	ctx := context.Background()
	tests := []struct {
		name string
		req  plugintest.Request
		want string
	}{
		{"denied tool", plugintest.DeniedToolCall(),
			`"POST /mcp" 200 request_id=req-7f3a user=alice mcp_method=tools/call mcp_tool=delete_everything allow=false reasons=mcp-tool-unauthorized`},
		{"allowed tool", plugintest.AllowedToolCall(),
			`"POST /mcp" 0 request_id=req-7f3a user=alice mcp_method=tools/call mcp_tool=echo allow=true reasons=domain-ok,mcp-tool-ok`},
		{"missing token", plugintest.Request{Method: "GET", Authority: "mcp.example.com", Path: "/mcp"},
			`"GET /mcp" 401 request_id=req-7f3a user= mcp_method=GET mcp_tool= allow=false reasons=token-missing`},
		{"foreign host", plugintest.Request{Method: "GET", Authority: "elsewhere.example.com", Path: "/x"},
			`"GET /x" 0 request_id=- user=- mcp_method=- mcp_tool=- allow=- reasons=-`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := &CheckServer{}
			h, err := NewHost(ctx, wasmbuild.Module(t), check, func(o *host.Options) { o.LogLevel = host.LogWarn })
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			var line string
			res, err := sendAndLog(ctx, h, check, tt.req, &line)
			if err != nil {
				t.Fatal(err)
			}
			if line != tt.want {
				t.Errorf("access log\n got %s\nwant %s", line, tt.want)
			}
			for _, l := range res.Logs {
				if strings.Contains(l, "authorize check") {
					t.Errorf("a record at log level warning: %s", l)
				}
			}
		})
	}
}

// sendAndLog sends req through h (no upstream response), ends the stream and renders
// accessLogFormat for it into line.
func sendAndLog(ctx context.Context, h *host.Host, check *CheckServer, req plugintest.Request, line *string) (plugintest.Result, error) {
	logsBefore := len(h.GuestLogs(host.LogTrace))
	st, err := h.NewStream(ctx, host.StreamInfo{})
	if err != nil {
		return plugintest.Result{}, err
	}
	hdrs := host.Headers{{Name: ":method", Value: req.Method}, {Name: ":path", Value: req.Path}, {Name: ":authority", Value: req.Authority},
		{Name: ":scheme", Value: "https"}, {Name: "x-request-id", Value: plugintest.RequestID}}
	for _, kv := range req.Headers {
		hdrs = append(hdrs, host.Header{Name: kv[0], Value: kv[1]})
	}
	stepCtx, cancel := context.WithTimeout(ctx, 5e9)
	defer cancel()
	r, err := st.SendRequestHeaders(stepCtx, hdrs, len(req.Chunks) == 0)
	for i := 0; err == nil && r.Reply == nil && i < len(req.Chunks); i++ {
		r, err = st.SendRequestBody(stepCtx, []byte(req.Chunks[i]), i == len(req.Chunks)-1)
	}
	if err != nil {
		return plugintest.Result{}, err
	}
	if err := st.Close(); err != nil {
		return plugintest.Result{}, err
	}
	*line = st.AccessLog(accessLogFormat)
	return plugintest.Result{Logs: h.GuestLogs(host.LogTrace)[logsBefore:], CheckCalls: int(check.Calls.Load())}, nil
}
