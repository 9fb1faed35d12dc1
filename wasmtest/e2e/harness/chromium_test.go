package harness

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestChromium_CookiesRedirectsAndForms checks the Chromium driver against a scripted server:
// a cookie set on a redirect is sent back, a form is filled and posted with a select and a
// textarea, the page's text is read as rendered (markup in text stays text), and the
// navigations are recorded.
func TestChromium_CookiesRedirectsAndForms(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /start", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "s1", Path: "/"})
		http.Redirect(w, r, "/form", http.StatusFound)
	})
	mux.HandleFunc("GET /form", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("sid"); err != nil || c.Value != "s1" {
			http.Error(w, "no session cookie", http.StatusForbidden)
			return
		}
		io.WriteString(w, `<!doctype html><p id="who">signed in &lt;b&gt;s1&lt;/b&gt;</p>
<form method="post" action="/submit"><select id="s" name="s"><option value="a">A</option><option value="b">B</option></select>
<textarea id="t" name="t"></textarea><button id="go" type="submit">Go</button></form>`)
	})
	mux.HandleFunc("POST /submit", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, "/done?s="+r.PostForm.Get("s")+"&t="+r.PostForm.Get("t"), http.StatusSeeOther)
	})
	mux.HandleFunc("GET /done", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<!doctype html><ul><li class="v">`+r.URL.Query().Get("s")+`</li><li class="v">`+r.URL.Query().Get("t")+`</li></ul>`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	b := StartChromium(t)
	if status := b.Goto(srv.URL + "/start"); status != http.StatusOK {
		t.Fatalf("goto: %d", status)
	}
	if got := b.Text("#who"); got != "signed in <b>s1</b>" {
		t.Fatalf("text %q", got)
	}
	if n := b.Count("#who b"); n != 0 {
		t.Fatalf("escaped markup became %d elements", n)
	}
	b.Select("#s", "b")
	b.Fill("#t", "hello")
	if u := b.Click("#go", srv.URL+"/done"); !strings.HasPrefix(u, srv.URL+"/done") {
		t.Fatalf("after the form the page is at %s", u)
	}
	if got := strings.Join(b.Texts("li.v"), ","); got != "b,hello" {
		t.Fatalf("the server got %q", got)
	}
	var paths []string
	for _, n := range b.Navigations() {
		paths = append(paths, strings.TrimPrefix(strings.SplitN(n.URL, "?", 2)[0], srv.URL))
	}
	if got := strings.Join(paths, " "); got != "/start /form /submit /done" {
		t.Fatalf("navigations %q", got)
	}
}
