package idp

import (
	"context"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

type userParamKey struct{}

// WithUserParam returns ctx carrying the callback's "user" field: Apple posts it with the
// form_post callback of a user's first sign-in only, and it is the only place Apple gives
// the user's name. The connector of a provider whose row says NameFromUserParam reads it.
func WithUserParam(ctx context.Context, raw string) context.Context {
	if raw == "" {
		return ctx
	}
	return context.WithValue(ctx, userParamKey{}, raw)
}

// UserParam returns the "user" field WithUserParam stored, or "".
func UserParam(ctx context.Context) string {
	s, _ := ctx.Value(userParamKey{}).(string)
	return s
}

// MaxUserParamBytes bounds the "user" field read; MaxNameBytes bounds the name taken from it.
const (
	MaxUserParamBytes = 4 << 10
	MaxNameBytes      = 256
)

// nameFromUserParam reads {"name":{"firstName":…,"lastName":…}} (Apple's first sign-in).
// Anything malformed, oversized or without a name gives "": the name is a courtesy, the
// identity comes from the verified ID token.
func nameFromUserParam(raw string) string {
	if raw == "" || len(raw) > MaxUserParamBytes {
		return ""
	}
	var u struct {
		Name struct {
			FirstName string `json:"firstName"`
			LastName  string `json:"lastName"`
		} `json:"name"`
	}
	if err := json.Unmarshal([]byte(raw), &u); err != nil {
		return ""
	}
	name := strings.Join(strings.Fields(u.Name.FirstName+" "+u.Name.LastName), " ")
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return -1
		}
		return r
	}, name)
	for len(name) > MaxNameBytes {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name
}
