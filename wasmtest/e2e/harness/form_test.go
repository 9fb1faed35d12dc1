package harness

import (
	"net/url"
	"reflect"
	"testing"
)

func TestParseForms_FindsActionMethodFieldsAndButtons(t *testing.T) {
	t.Parallel()
	base, _ := url.Parse("http://127.0.0.1:8080/consent?x=1")
	tests := []struct {
		name string
		html string
		want []Form
	}{
		{
			name: "consent form with hidden inputs and named buttons",
			html: `<html><body><!-- <form action="/ignored"> -->
<FORM Method="post" action="/interaction/abc/confirm">
  <input type="hidden" name="uid" value="abc&amp;def">
  <input type=hidden name=csrf value='t"ok'/>
  <input type="text" name="note">
  <input type="checkbox" name="remember" checked>
  <input type="checkbox" name="unchecked" value="no">
  <button type="submit" name="action" value="deny">Deny</button>
  <button name="action" value="approve">Approve</button>
  <button type="button" name="js" value="x">Not a submit</button>
</FORM></body></html>`,
			want: []Form{{
				Action: mustURL(t, "http://127.0.0.1:8080/interaction/abc/confirm"),
				Method: "POST",
				Fields: url.Values{"uid": {"abc&def"}, "csrf": {`t"ok`}, "note": {""}, "remember": {"on"}},
				Buttons: []FormButton{
					{Name: "action", Value: "deny"},
					{Name: "action", Value: "approve"},
				},
			}},
		},
		{
			name: "form_post page without action or buttons, script ignored",
			html: `<form method="post"><script>var s = "<form action='/evil'>";</script>
<input type="hidden" name="code" value="c1"><input type="hidden" name="state" value="s1"></form>`,
			want: []Form{{
				Action: base,
				Method: "POST",
				Fields: url.Values{"code": {"c1"}, "state": {"s1"}},
			}},
		},
		{
			name: "GET form, submit input, textarea, unterminated form",
			html: `<form action="https://other.example/next"><textarea name="t">a &lt; b</textarea><input type="submit" value="Go">`,
			want: []Form{{
				Action:  mustURL(t, "https://other.example/next"),
				Method:  "GET",
				Fields:  url.Values{"t": {"a < b"}},
				Buttons: []FormButton{{Value: "Go"}},
			}},
		},
		{name: "no form", html: `<p>hello</p>`, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseForms([]byte(tt.html), base)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseForms:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestForm_ValuesAddsClickedButton(t *testing.T) {
	t.Parallel()
	f := Form{Fields: url.Values{"uid": {"1"}}, Buttons: []FormButton{{Name: "action", Value: "approve"}}}
	b, ok := f.Button("action", "approve")
	if !ok {
		t.Fatal("button not found")
	}
	if got := f.Values(&b).Encode(); got != "action=approve&uid=1" {
		t.Errorf("Values = %q", got)
	}
	if got := f.Values(nil).Encode(); got != "uid=1" {
		t.Errorf("Values(nil) = %q", got)
	}
	if _, ok := f.Button("action", "deny"); ok {
		t.Error("found a button that is not there")
	}
}

func FuzzParseForms(f *testing.F) {
	f.Add([]byte(`<form method=post action="/x"><input type=hidden name=a value=b><button name=action value=approve></form>`))
	f.Add([]byte(`<form action="%zz">`))
	f.Add([]byte(`<input name=a><form><textarea name=t>x`))
	f.Add([]byte(`<!-- unterminated <form>`))
	f.Add([]byte(`<form a='unterminated`))
	base, _ := url.Parse("http://127.0.0.1/")
	f.Fuzz(func(t *testing.T, b []byte) {
		forms, err := ParseForms(b, base)
		if err != nil {
			return
		}
		for _, form := range forms {
			if form.Action == nil || (form.Method != "GET" && form.Method != "POST") {
				t.Fatalf("bad form %+v", form)
			}
		}
	})
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
