package check

import (
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// The decisions end to end (tokens, cookies, sessions, upstream, assertions) are tested
// through the HTTP adapter in package server (check_test.go, redteam_check_test.go).

func TestRefusal_HTTPStatus(t *testing.T) {
	t.Parallel()
	cases := map[*Refusal]int{
		invalidRequest("x"):           http.StatusBadRequest,
		invalidToken("x"):             http.StatusUnauthorized,
		noSession("x"):                http.StatusUnauthorized,
		serverError(errors.New("db")): http.StatusServiceUnavailable,
		{Response: &checkapi.Response{Status: checkapi.StatusUpstreamRequired}}: http.StatusUnauthorized,
	}
	for r, want := range cases {
		if got := r.HTTPStatus(); got != want {
			t.Errorf("%v: status %d, want %d", r, got, want)
		}
	}
	if r := serverError(errors.New("secret detail")); r.Response.ErrorDescription == "secret detail" {
		t.Error("a server error's answer carries its cause")
	}
}

func TestIdentity_Claims(t *testing.T) {
	t.Parallel()
	id := Identity(&store.Session{Subject: "alice", Claims: []byte(`{"s":"v","l":["a",1,true,null,{"k":"v"}],"n":2.5,"z":null,"o":{"a": 1}}`)})
	want := map[string][]string{"s": {"v"}, "l": {"a", "1", "true", `{"k":"v"}`}, "n": {"2.5"}, "o": {`{"a":1}`}}
	if !reflect.DeepEqual(id.Claims, want) {
		t.Fatalf("claims %v, want %v", id.Claims, want)
	}
}
