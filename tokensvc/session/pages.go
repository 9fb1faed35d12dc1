package session

import (
	"html/template"
	"net/http"
)

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="referrer" content="no-referrer"><title>{{.Title}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}button{font-size:1rem;padding:.4rem 1rem}</style>
</head><body><h1>{{.Title}}</h1><p>{{.Message}}</p>{{if .Link}}<p><a href="{{.Link.Href}}">{{.Link.Text}}</a></p>{{end}}
{{if .Form}}<form method="post" action="{{.Form.Action}}"><input type="hidden" name="csrf_token" value="{{.Form.CSRF}}">{{if .Form.ReturnTo}}<input type="hidden" name="return_to" value="{{.Form.ReturnTo}}">{{end}}<button type="submit">{{.Form.Button}}</button></form>{{end}}
</body></html>
`))

type page struct {
	Title   string
	Message string
	Form    *pageForm
	Link    *pageLink
}

type pageLink struct {
	Href, Text string
}

type pageForm struct {
	Action, CSRF, ReturnTo, Button string
}

// render writes an HTML page; nothing in it is secret and it is never cached.
func render(w http.ResponseWriter, status int, p page) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	w.WriteHeader(status)
	_ = pageTmpl.Execute(w, p)
}

func renderError(w http.ResponseWriter, status int, message string) {
	title := "Sign-in failed"
	switch status {
	case http.StatusServiceUnavailable:
		title = "Sign-in is unavailable"
	case http.StatusNotFound:
		title = "Not found"
	}
	render(w, status, page{Title: title, Message: message})
}
