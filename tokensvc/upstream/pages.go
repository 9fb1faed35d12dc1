package upstream

import (
	"html/template"
	"net/http"

	"github.com/mcpmesh/gateway/tokensvc/reqid"
)

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="referrer" content="no-referrer"><title>{{.Title}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}button{font-size:1rem;padding:.4rem 1rem}</style>
</head><body><h1>{{.Title}}</h1><p>{{.Message}}</p>{{if .Items}}<ul>{{range .Items}}<li>{{.}}</li>{{end}}</ul>{{end}}{{if .Back}}<p><a href="{{.Back}}">Back to the application</a></p>{{end}}
{{if .RequestID}}<p style="color:#666;font-size:.9rem">Request ID: <code>{{.RequestID}}</code></p>{{end}}
{{if .Form}}<form method="post" action="{{.Form.Action}}"><input type="hidden" name="csrf_token" value="{{.Form.CSRF}}"><input type="hidden" name="redirect_url" value="{{.Form.RedirectURL}}">{{if .Form.Route}}<input type="hidden" name="route" value="{{.Form.Route}}">{{end}}<button type="submit">{{.Form.Button}}</button></form>{{end}}
</body></html>
`))

type page struct {
	Title, Message string
	Items          []string
	Back           string // a checked return target (redirect_url, or the authorization request)
	Form           *pageForm
	RequestID      string
}

type pageForm struct {
	Action, CSRF, RedirectURL, Route, Button string
	// RedirectOrigin is where the form's answer redirects: browsers apply form-action to
	// the redirect too.
	RedirectOrigin string
}

// render writes an HTML page; nothing in it is secret and it is never cached. Error pages
// show the request ID.
func render(w http.ResponseWriter, r *http.Request, status int, p page) {
	if status >= 400 {
		p.RequestID = reqid.FromContext(r.Context())
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	formAction := "'self'"
	if p.Form != nil && p.Form.RedirectOrigin != "" {
		formAction += " " + p.Form.RedirectOrigin
	}
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action "+formAction+"; frame-ancestors 'none'; base-uri 'none'")
	w.WriteHeader(status)
	_ = pageTmpl.Execute(w, p)
}

func renderError(w http.ResponseWriter, r *http.Request, status int, title, message string) {
	render(w, r, status, page{Title: title, Message: message})
}

// renderFailure is renderError with a link back to back, the flow's own (checked) return
// target: for failures of a flow this session started.
func renderFailure(w http.ResponseWriter, r *http.Request, status int, title, message, back string) {
	render(w, r, status, page{Title: title, Message: message, Back: back})
}

// redirect sends the browser to location (303: the next request is a GET).
func redirect(w http.ResponseWriter, location string) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Location", location)
	w.WriteHeader(http.StatusSeeOther)
}
