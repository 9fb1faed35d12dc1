package harness

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestBrowser_RedirectsCookiesAndForms checks the user-agent rules the Browser follows against
// a scripted server: cookies set on one step are sent on the next, 303 turns POST into GET,
// 307 repeats POST with its body, the consent button is clicked, and the flow stops at the
// redirect prefix without requesting it.
func TestBrowser_RedirectsCookiesAndForms(t *testing.T) {
	t.Parallel()
	var callbackHit bool
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "s1", Path: "/"})
		http.Redirect(w, r, "/consent", http.StatusFound)
	})
	mux.HandleFunc("GET /consent", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("sid"); err != nil || c.Value != "s1" {
			http.Error(w, "no session cookie", http.StatusForbidden)
			return
		}
		io.WriteString(w, `<form method="post" action="/decide"><input type="hidden" name="uid" value="u1">
<button name="action" value="deny">No</button><button name="action" value="approve">Yes</button></form>`)
	})
	mux.HandleFunc("POST /decide", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.PostForm.Get("uid") != "u1" {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		if r.PostForm.Get("action") != "approve" {
			http.Redirect(w, r, "http://127.0.0.1:1/cb?error=access_denied", http.StatusSeeOther)
			return
		}
		http.Redirect(w, r, "/again", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/again", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "307 must keep POST, got "+r.Method, http.StatusBadRequest)
			return
		}
		if err := r.ParseForm(); err != nil || r.PostForm.Get("action") != "approve" {
			http.Error(w, "307 must keep the body", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, "/final", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /final", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:1/cb?code=c1&state=s", http.StatusFound)
	})
	mux.HandleFunc("/cb", func(http.ResponseWriter, *http.Request) { callbackHit = true })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	b := NewBrowser()
	stop, err := b.Authorize(ctx, srv.URL+"/authorize", "http://127.0.0.1:1/cb")
	if err != nil {
		t.Fatalf("Authorize: %v\nhistory %v", err, b.History())
	}
	if got := stop.Query().Get("code"); got != "c1" {
		t.Errorf("stopped at %s, want code=c1", stop)
	}
	if callbackHit {
		t.Error("the browser requested the redirect URI")
	}
	if n := len(b.History()); n != 5 {
		t.Errorf("history has %d requests, want 5: %v", n, b.History())
	}

	deny := NewBrowser()
	deny.ConsentButton = FormButton{Name: "action", Value: "deny"}
	stop, err = deny.Authorize(ctx, srv.URL+"/authorize", "http://127.0.0.1:1/cb")
	if err != nil {
		t.Fatalf("Authorize with deny: %v", err)
	}
	if got := stop.Query().Get("error"); got != "access_denied" {
		t.Errorf("deny stopped at %s, want error=access_denied", stop)
	}
}

func TestBrowser_ErrorsEndTheFlow(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/error", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "invalid_request: bad client", http.StatusBadRequest)
	})
	mux.HandleFunc("/noform", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<p>Sign in with your password</p>") })
	mux.HandleFunc("/js", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "javascript:alert(1)", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tests := []struct {
		path, want string
		noRedirect bool
	}{
		{"/loop", "more than", true},
		{"/error", "invalid_request: bad client", true},
		{"/noform", "no form", true},
		{"/js", "non-HTTP", false},
	}
	for _, tt := range tests {
		_, err := NewBrowser().Authorize(ctx, srv.URL+tt.path, "http://127.0.0.1:1/cb")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.path, err, tt.want)
		}
		if tt.noRedirect && !errors.Is(err, ErrNoRedirect) {
			t.Errorf("%s: error %v does not wrap ErrNoRedirect", tt.path, err)
		}
	}
}
