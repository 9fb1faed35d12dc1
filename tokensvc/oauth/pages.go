package oauth

import (
	"bytes"
	"html/template"
	"net/http"

	"github.com/mcpmesh/gateway/tokensvc/reqid"
)

const pageStyle = `body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#222}
h1{font-size:1.4rem}dl{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem}dt{font-weight:600}
dd{margin:0;word-break:break-all}code{word-break:break-all}.muted{color:#666;font-size:.9rem}
button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.6rem}`

var pageTemplates = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{{.Title}}</title><style>` + pageStyle + `</style></head>
<body><main><h1>{{.Title}}</h1><p>{{.Message}}</p>
{{if .ClientID}}<dl><dt>Client ID</dt><dd><code>{{.ClientID}}</code></dd></dl>{{end}}
<p class="muted">Request ID: <code>{{.RequestID}}</code></p></main></body></html>
`))

var consentTemplate = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Allow access?</title><style>` + pageStyle + `</style></head>
<body><main><h1>Allow {{.ClientName}} to access MCP servers?</h1>
<p>An application wants to act as <strong>{{.User}}</strong> {{if .AllServers}}on every MCP server of this gateway that you may use (it asked for none in particular; approved at <strong>{{.Issuer}}</strong>){{else}}on the MCP servers of <strong>{{.Issuer}}</strong>{{end}}.
Only approve if you started this from an application you trust.</p>
<dl>
<dt>Application</dt><dd>{{.ClientName}}{{if .Unverified}} <span class="muted">(name chosen by the application)</span>{{end}}</dd>
<dt>Client ID</dt><dd><code>{{.ClientID}}</code></dd>
{{if .Publisher}}<dt>Published at</dt><dd><code>{{.Publisher}}</code> <span class="muted">(the host of the application's metadata document, which chose the name above)</span></dd>
{{end}}<dt>Returns to</dt><dd><code>{{.RedirectHost}}</code>{{if .LocalRedirect}} <span class="muted">(a program on this computer)</span>{{end}}</dd>
{{if .RedirectURIs}}<dt>Redirect URIs</dt><dd>{{range .RedirectURIs}}<code>{{.}}</code><br>{{end}}<span class="muted">(every address the application registered)</span></dd>
{{end}}
<dt>Resource</dt><dd><code>{{.Resource}}</code></dd>
<dt>Scope</dt><dd>{{if .Scope}}<code>{{.Scope}}</code>{{else}}<span class="muted">none requested</span>{{end}}</dd>
</dl>
<form method="post" action="{{.Action}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<input type="hidden" name="request" value="{{.Request}}">
<button type="submit" name="action" value="approve">Approve</button>
<button type="submit" name="action" value="deny">Deny</button>
</form>
<p class="muted">Request ID: <code>{{.RequestID}}</code></p></main></body></html>
`))

// errorPage is the data of the error page.
type errorPage struct {
	Title, Message, ClientID, RequestID string
}

// consentPage is the data of the consent page.
type consentPage struct {
	ClientName, ClientID, User, Issuer, RedirectHost, Resource, Scope string
	Unverified                                                        bool
	// Publisher is the host of a client ID metadata document's URL; LocalRedirect is set when
	// the redirect URI is on a loopback host; RedirectURIs are every redirect URI the client
	// registered (dynamic and metadata-document clients).
	Publisher     string
	LocalRedirect bool
	RedirectURIs  []string
	// AllServers is set when the request names no resource: the token will be valid at
	// every MCP server route of the gateway, not only at Issuer's.
	AllServers                       bool
	Action, CSRF, Request, RequestID string
}

// Content-Security-Policy of the pages. The consent page omits form-action:
// Chrome and Safari apply form-action to every redirect that follows a form
// submission, so the 303 back to the client — and any redirect the client's
// https callback makes onward to its own app scheme (claude.ai → claude://)
// — would be blocked. The form posts to this origin only; everything it
// shows is escaped and default-src 'none' forbids scripts.
const (
	cspPage    = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	cspConsent = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'"
)

// setPageHeaders sets the headers of every HTML page.
func setPageHeaders(w http.ResponseWriter, csp string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", csp)
}

// renderError shows an HTML error page. Used before the redirect URI is
// verified, when redirecting the error to the client would be unsafe.
func renderError(w http.ResponseWriter, r *http.Request, status int, title, message, clientID string) {
	var buf bytes.Buffer
	if err := pageTemplates.Execute(&buf, errorPage{Title: title, Message: message, ClientID: clientID, RequestID: reqid.FromContext(r.Context())}); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	setPageHeaders(w, cspPage)
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// renderUnavailable is the error page for a failure of the service's own dependencies (its
// store unreachable): 503 with Retry-After, as the token endpoint's temporarily_unavailable.
func renderUnavailable(w http.ResponseWriter, r *http.Request, message, clientID string) {
	w.Header().Set("Retry-After", retryAfterSeconds)
	renderError(w, r, http.StatusServiceUnavailable, "Temporarily unavailable", message, clientID)
}

// renderDomainNotAllowed is the page docs/token-service.md describes for a URL client ID
// outside mcp_allowed_client_id_domains.
func renderDomainNotAllowed(w http.ResponseWriter, r *http.Request, clientID string) {
	renderError(w, r, http.StatusBadRequest, "Client not allowed",
		"The administrator has restricted the list of MCP client ID document domains, and the domain of this application's client ID is not on it. Ask your administrator to add it to mcp_allowed_client_id_domains.",
		clientID)
}

func renderConsent(w http.ResponseWriter, r *http.Request, p consentPage) {
	p.RequestID = reqid.FromContext(r.Context())
	var buf bytes.Buffer
	if err := consentTemplate.Execute(&buf, p); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	setPageHeaders(w, cspConsent)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}
