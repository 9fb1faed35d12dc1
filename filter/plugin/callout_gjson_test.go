package plugin

import (
	"encoding/base64"
	"reflect"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/jsontext"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/shared/policy"
	"github.com/tidwall/gjson"
)

// bundleFromGJSON is bundleFrom as it was when the filter read the check answer with gjson:
// the oracle FuzzBundleFrom_MatchesGJSON compares bundleFrom with.
func (f *Filter) bundleFromGJSON(res gjson.Result, now time.Time) (*bundle, error) {
	id := res.Get(checkapi.FieldIdentity)
	sub := id.Get(checkapi.FieldSubject).String()
	if !id.IsObject() || sub == "" {
		return nil, errBadBundle
	}
	b := &bundle{
		input: policy.Input{
			Authenticated: true,
			User:          sub,
			Email:         id.Get(checkapi.FieldEmail).String(),
			Name:          id.Get(checkapi.FieldName).String(),
			ClientID:      id.Get(checkapi.FieldClientID).String(),
		},
		assertion:     res.Get(checkapi.FieldAssertion).String(),
		upstreamToken: res.Get(checkapi.FieldUpstreamToken).String(),
		clientToken:   res.Get(checkapi.FieldClientToken).String(),
	}
	if b.assertion == "" {
		return nil, errBadBundle
	}
	if k := res.Get(checkapi.FieldSessionKey); k.Exists() {
		key, err := base64.RawURLEncoding.DecodeString(k.String())
		if k.Type != gjson.String || err != nil || len(key) < 16 {
			return nil, errBadBundle
		}
		b.session = newSessionBinding(key)
	}
	for _, g := range id.Get(checkapi.FieldGroups).Array() {
		b.input.Groups = append(b.input.Groups, g.String())
	}
	if claims := id.Get(checkapi.FieldClaims); claims.IsObject() {
		b.input.Claims = map[string][]string{}
		claims.ForEach(func(k, v gjson.Result) bool {
			vals := make([]string, 0, 1)
			for _, e := range v.Array() {
				vals = append(vals, e.String())
			}
			b.input.Claims[k.String()] = vals
			return true
		})
	}
	b.expires = now.Add(time.Duration(f.cfg.CacheTTLSeconds) * time.Second)
	if exp := res.Get(checkapi.FieldExpiresAt).Int(); exp > 0 {
		t := time.Unix(exp, 0)
		if !now.Before(t) {
			return nil, errBadBundle
		}
		if t.Before(b.expires) {
			b.expires = t
		}
	}
	return b, nil
}

func TestBundleFrom(t *testing.T) {
	t.Parallel()
	f := &Filter{cfg: &pluginconf.Config{CacheTTLSeconds: 300}}
	now := time.Unix(1_800_000_000, 0)
	const key = `"MDEyMzQ1Njc4OWFiY2RlZg"` // 16 bytes
	tests := []struct {
		name, body string
		ok         bool
	}{
		{"full", `{"status":"ok","identity":{"sub":"u1","email":"a@b","name":"A","client_id":"c","groups":["g1","g2"],"claims":{"dept":["x"],"n":7}},"assertion":"jwt","upstream_token":"up","client_token":"ct","session_key":` + key + `,"expires_at":1800000100}`, true},
		{"minimal", `{"identity":{"sub":"u1"},"assertion":"jwt"}`, true},
		{"first duplicate wins", `{"identity":{"sub":"u1"},"identity":{"sub":""},"assertion":"jwt"}`, true},
		{"escaped names", `{"identit\u0079":{"s\u0075b":"u1"},"assertion":"jwt"}`, true},
		{"identity not an object", `{"identity":"u1","assertion":"jwt"}`, false},
		{"no subject", `{"identity":{"email":"a"},"assertion":"jwt"}`, false},
		{"no assertion", `{"identity":{"sub":"u1"}}`, false},
		{"session key not a string", `{"identity":{"sub":"u1"},"assertion":"jwt","session_key":1}`, false},
		{"session key null", `{"identity":{"sub":"u1"},"assertion":"jwt","session_key":null}`, false},
		{"session key short", `{"identity":{"sub":"u1"},"assertion":"jwt","session_key":"AAAA"}`, false},
		{"expired", `{"identity":{"sub":"u1"},"assertion":"jwt","expires_at":1800000000}`, false},
		{"expiry as a string", `{"identity":{"sub":"u1"},"assertion":"jwt","expires_at":"1"}`, false},
		{"huge expiry (time.Unix wraps into the past)", `{"identity":{"sub":"u1"},"assertion":"jwt","expires_at":1e400}`, false},
		{"top level array", `[{"identity":{"sub":"u1"},"assertion":"jwt"}]`, false},
	}
	for _, tt := range tests {
		b, err := f.bundleFrom(jsontext.Parse(tt.body), now)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v, want ok %v", tt.name, err, tt.ok)
		}
		checkSameBundle(t, tt.body, b, err, f, now)
	}
}

// FuzzBundleFrom_MatchesGJSON checks that the filter reads every check answer as it did with
// gjson: the same validity, the same status, and the same bundle or the same refusal. Seeds:
// testdata/fuzz/FuzzBundleFrom_MatchesGJSON and f.Add.
func FuzzBundleFrom_MatchesGJSON(f *testing.F) {
	f.Add([]byte(`{"status":"ok","identity":{"sub":"u1","email":"a@b","name":"A","client_id":"c","groups":["g1",2,null,{"a":1}],"claims":{"dept":["x",true],"n":7,"n":[1.5e3],"e":null}},"assertion":"jwt","upstream_token":"up","client_token":"ct","session_key":"MDEyMzQ1Njc4OWFiY2RlZg","expires_at":1800000100}`))
	f.Add([]byte(`{"status":"invalid_token","identity":{"sub":1e3},"assertion":{"x":"y"},"expires_at":"18000001e2"}`))
	f.Add([]byte(` {"st\u0061tus":"ok","identity":{"sub":"\ud800\u0041"},"assertion":"a","expires_at":99999999999999999999} `))
	f.Add([]byte(`"{\"status\":\"ok\"}"`))
	filter := &Filter{cfg: &pluginconf.Config{CacheTTLSeconds: 300}}
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, body []byte) {
		valid := jsontext.Validate(body, jsontext.MaxDepth) == jsontext.Valid
		if valid != gjson.ValidBytes(body) {
			if valid || jsontext.Validate(body, jsontext.MaxDepth) != jsontext.TooDeep {
				t.Fatalf("%q: valid %v, gjson %v", body, valid, !valid)
			}
			return // nested deeper than jsontext follows: refused, where gjson read it
		}
		if !valid {
			return
		}
		res := jsontext.Parse(string(body))
		if st, want := res.Get(checkapi.FieldStatus).String(), gjson.ParseBytes(body).Get(checkapi.FieldStatus).String(); st != want {
			t.Fatalf("%q: status %q, gjson %q", body, st, want)
		}
		b, err := filter.bundleFrom(res, now)
		checkSameBundle(t, string(body), b, err, filter, now)
	})
}

// checkSameBundle checks that bundleFromGJSON reads body as b and err.
func checkSameBundle(t *testing.T, body string, b *bundle, err error, f *Filter, now time.Time) {
	t.Helper()
	want, wantErr := f.bundleFromGJSON(gjson.Parse(body), now)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%q: err %v, gjson reading %v", body, err, wantErr)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(b.input, want.input) || b.assertion != want.assertion || b.upstreamToken != want.upstreamToken ||
		b.clientToken != want.clientToken || !b.expires.Equal(want.expires) || (b.session.key == nil) != (want.session.key == nil) {
		t.Fatalf("%q: bundle\n%+v\ngjson reading\n%+v", body, *b, *want)
	}
	if b.session.key != nil {
		var got, wantTag [sessionTagLen]byte
		b.session.tag(&got, "session-1")
		want.session.tag(&wantTag, "session-1")
		if got != wantTag {
			t.Fatalf("%q: session key differs from the gjson reading", body)
		}
	}
}
