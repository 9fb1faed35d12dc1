package checkapi

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// TestFieldNamesAreTheJSONTags: the names the filter reads and writes by hand are those
// encoding/json uses on the token service's side.
func TestFieldNamesAreTheJSONTags(t *testing.T) {
	t.Parallel()
	tags := func(v any) []string {
		var out []string
		ty := reflect.TypeOf(v)
		for i := range ty.NumField() {
			name, _, _ := cutComma(ty.Field(i).Tag.Get("json"))
			out = append(out, name)
		}
		return out
	}
	for _, c := range []struct {
		v    any
		want []string
	}{
		{Request{}, []string{FieldRouteID, FieldHost, FieldToken, FieldCookie, FieldRequestID}},
		{Response{}, []string{FieldStatus, FieldIdentity, FieldAssertion, FieldUpstreamToken, FieldClientToken, FieldSessionKey, FieldExpiresAt, "error", "error_description"}},
		{Identity{}, []string{FieldSubject, FieldEmail, FieldName, FieldGroups, FieldClaims, FieldClientID}},
	} {
		if got := tags(c.v); !slices.Equal(got, c.want) {
			t.Errorf("%T: tags %q, field constants %q", c.v, got, c.want)
		}
	}
}

func cutComma(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == ',' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]int{StatusOK: 200, StatusInvalidToken: 401, StatusNoSession: 401, StatusUpstreamRequired: 401, "OK": 0, "error": 0, "": 0} {
		if got := HTTPStatus(status); got != want {
			t.Errorf("HTTPStatus(%q) = %d, want %d", status, got, want)
		}
	}
}

func FuzzAppendRequest(f *testing.F) {
	f.Add("https://mcp.example.com/mcp", "mcp.example.com", false, "tok", "req-1")
	f.Add("r\"\\\x00\u2028", "h\xff", true, "c\n", "")
	f.Fuzz(func(t *testing.T, routeID, host string, cookie bool, credential, requestID string) {
		b := AppendRequest(nil, routeID, host, cookie, credential, requestID)
		var got Request
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		want := Request{RouteID: routeID, Host: host, RequestID: requestID}
		if cookie {
			want.Cookie = credential
		} else {
			want.Token = credential
		}
		// Invalid UTF-8 is replaced on both sides of the comparison alike.
		wb, _ := json.Marshal(want)
		_ = json.Unmarshal(wb, &want)
		if got != want {
			t.Fatalf("AppendRequest(%q) read back as %+v, want %+v", b, got, want)
		}
	})
}
