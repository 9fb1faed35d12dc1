package session

import (
	"html/template"
	"net/http"

	"github.com/mcpmesh/gateway/tokensvc/reqid"
)

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="referrer" content="no-referrer"><title>{{.Title}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}button{font-size:1rem;padding:.4rem 1rem}</style>
</head><body><h1>{{.Title}}</h1><p>{{.Message}}</p>{{if .Link}}<p><a href="{{.Link.Href}}">{{.Link.Text}}</a></p>{{end}}
{{if .RequestID}}<p style="color:#666;font-size:.9rem">Request ID: <code>{{.RequestID}}</code></p>{{end}}
{{if .Form}}<form method="post" action="{{.Form.Action}}"><input type="hidden" name="csrf_token" value="{{.Form.CSRF}}">{{if .Form.ReturnTo}}<input type="hidden" name="return_to" value="{{.Form.ReturnTo}}">{{end}}<button type="submit">{{.Form.Button}}</button></form>{{end}}
</body></html>
`))

type page struct {
	Title   string
	Message string
	Form    *pageForm
	Link    *pageLink
	// RequestID is shown on error pages (reqid.FromContext).
	RequestID string
}

type pageLink struct {
	Href, Text string
}

type pageForm struct {
	Action, CSRF, ReturnTo, Button string
}

// render writes an HTML page; nothing in it is secret and it is never cached. Error pages
// (status 400 and above) show the request's ID.
func render(w http.ResponseWriter, r *http.Request, status int, p page) {
	if status >= 400 {
		p.RequestID = reqid.FromContext(r.Context())
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	w.WriteHeader(status)
	_ = pageTmpl.Execute(w, p)
}

func renderError(w http.ResponseWriter, r *http.Request, status int, message string) {
	title := "Sign-in failed"
	switch status {
	case http.StatusServiceUnavailable:
		title = "Sign-in is unavailable"
	case http.StatusNotFound:
		title = "Not found"
	}
	render(w, r, status, page{Title: title, Message: message})
}
