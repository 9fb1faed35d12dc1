package main

import (
	"bytes"
	"html/template"
	"log"
	"net/http"

	"github.com/mcpmesh/gateway/sdk/go/assertion"
)

// pageData is what the page shows.
type pageData struct {
	Identity  *assertion.Identity
	HasTE     bool
	Servers   []serverView
	ListError string
	CSRF      string
	Form      toolForm
	Call      *callView
}

var page = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Demo MCP app</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
header{background:#1d2330;color:#fff;padding:14px 28px}
header h1{margin:0;font-size:20px}
header p{margin:2px 0 0;color:#b9c0cf;font-size:13px}
main{max-width:960px;margin:24px auto;padding:0 20px}
section{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.08);padding:18px 22px;margin-bottom:20px}
h2{font-size:16px;margin:0 0 12px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 18px;margin:0}
dt{color:#5b6475}dd{margin:0}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:8px 10px;border-bottom:1px solid #e6e8ec}
th{font-size:13px;color:#5b6475;font-weight:600}
code{font:13px ui-monospace,monospace;background:#f0f1f4;padding:1px 4px;border-radius:3px}
.badge{display:inline-block;padding:2px 9px;border-radius:10px;font-size:12px;font-weight:600}
.yes{background:#dff5e3;color:#17692a}.no{background:#fdecc8;color:#7a5300}
a.button,button{display:inline-block;border:0;border-radius:5px;padding:6px 12px;font-size:13px;cursor:pointer;text-decoration:none}
a.connect,button{background:#2f6fdf;color:#fff}a.disconnect{background:#e9ebef;color:#1d2330}
form label{display:block;margin:8px 0 3px;color:#5b6475;font-size:13px}
input,select,textarea{font:14px ui-monospace,monospace;width:100%;box-sizing:border-box;padding:6px;border:1px solid #cfd4dc;border-radius:4px}
textarea{height:70px}form button{margin-top:12px}
.outcome{border-left:4px solid #999;padding:8px 12px;background:#fafbfc;white-space:pre-wrap;font:13px ui-monospace,monospace}
.result{border-color:#2e9b47}.denied{border-color:#d13b3b}.tool-error,.failed{border-color:#d08a00}
.error{color:#b02a2a}.muted{color:#5b6475;font-size:13px}
</style></head>
<body>
<header><h1>Demo MCP app</h1><p>An application behind an <code>mcp.client</code> route of the gateway</p></header>
<main>
<section id="identity">
<h2>Signed in</h2>
<dl>
<dt>Name</dt><dd class="name">{{.Identity.Name}}</dd>
<dt>Email</dt><dd class="email">{{.Identity.Email}}</dd>
<dt>Subject</dt><dd class="subject"><code>{{.Identity.Subject}}</code></dd>
<dt>Groups</dt><dd class="groups">{{range $i, $g := .Identity.Groups}}{{if $i}}, {{end}}{{$g}}{{else}}none{{end}}</dd>
<dt>Issuer</dt><dd><code>{{.Identity.Issuer}}</code></dd>
</dl>
<p class="muted verified">Verified: the <code>X-Gateway-Assertion</code> signature checked against the gateway's JWKS, for audience <code>{{.Identity.Audience}}</code>.
External Token: {{if .HasTE}}received (never shown; handed to the LLM API stand-in){{else}}<span class="error">not received</span>{{end}}.</p>
</section>

<section id="servers">
<h2>MCP servers you may use</h2>
{{if .ListError}}<p class="error list-error">{{.ListError}}</p>{{end}}
{{if .Servers}}
<table>
<thead><tr><th>Server</th><th>URL</th><th>Connected</th><th></th></tr></thead>
<tbody>
{{range .Servers}}<tr class="server" data-url="{{.URL}}">
<td class="server-name">{{.Name}}</td>
<td><code>{{.URL}}</code></td>
<td class="state">{{if .Connected}}<span class="badge yes">connected</span>{{else}}<span class="badge no">not connected</span>{{end}}</td>
<td>{{if .Connected}}{{if .DisconnectURL}}<a class="button disconnect" href="{{.DisconnectURL}}">Disconnect</a>{{end}}{{else}}{{if .ConnectURL}}<a class="button connect" href="{{.ConnectURL}}">Connect</a>{{end}}{{end}}</td>
</tr>
{{end}}</tbody>
</table>
<p class="muted">Connect runs the server's upstream OAuth flow at the gateway, which keeps the upstream token; you come back here.</p>
{{else if not .ListError}}<p class="no-servers">The gateway lists no MCP server for you.</p>{{end}}
</section>

<section id="tool">
<h2>Call a tool through the LLM API stand-in</h2>
<p class="muted">The app hands your External Token to a separate process (the LLM API stand-in), which calls the MCP server through the gateway. The gateway's policy applies to every call.</p>
<form method="post" action="/call">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<label for="server">Server</label>
<select id="server" name="server">{{$sel := .Form.Server}}{{range .Servers}}<option value="{{.URL}}"{{if eq .URL $sel}} selected{{end}}>{{.Name}}</option>{{end}}</select>
<label for="toolname">Tool</label>
<input id="toolname" name="tool" value="{{.Form.Tool}}" placeholder="echo">
<label for="arguments">Arguments (JSON object)</label>
<textarea id="arguments" name="arguments">{{.Form.Arguments}}</textarea>
<button type="submit" id="call">Call tool</button>
</form>
</section>

{{with .Call}}
<section id="outcome">
<h2>{{if eq .Kind "result"}}Result{{else if eq .Kind "denied"}}Denied by the gateway{{else if eq .Kind "tool-error"}}The tool returned an error{{else}}The call failed{{end}}{{if .Tool}}: <code>{{.Tool}}</code>{{end}}</h2>
{{if .Server}}<p class="muted">on <code>{{.Server}}</code>{{if .GatewayStatus}}, gateway answered HTTP {{.GatewayStatus}}{{end}}</p>{{end}}
<div class="outcome {{.Kind}}" data-kind="{{.Kind}}">{{.Text}}</div>
</section>
{{end}}
</main></body></html>
`))

// renderPage executes the template into a buffer first, so a failure is a clean 500.
func renderPage(w http.ResponseWriter, status int, data *pageData) {
	var buf bytes.Buffer
	if err := page.Execute(&buf, data); err != nil {
		log.Printf("render: %v", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
