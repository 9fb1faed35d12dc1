package mcpauth

import (
	"context"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmesh/gateway/sdk/go/assertion"
)

// identityKey is the key of the identity in auth.TokenInfo.Extra.
const identityKey = "gateway_identity"

// requestState carries the verified identity and the client's Authorization header through
// the SDK's bearer-token middleware.
type requestState struct {
	id            *assertion.Identity
	authorization []string
}

type stateKey struct{}

// Handler returns next (the MCP SDK's HTTP handler) behind assertion verification by v.
func Handler(v *assertion.Verifier, next http.Handler) http.Handler {
	restore := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := r.Context().Value(stateKey{}).(*requestState)
		r.Header.Del("Authorization")
		for _, a := range st.authorization {
			r.Header.Add("Authorization", a)
		}
		next.ServeHTTP(w, r)
	})
	// auth.RequireBearerToken is the SDK's way to give it a TokenInfo; the token it sees is
	// the assertion, already verified below.
	withTokenInfo := auth.RequireBearerToken(func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		st, ok := ctx.Value(stateKey{}).(*requestState)
		if !ok {
			return nil, errors.New("mcpauth: no verified assertion")
		}
		return &auth.TokenInfo{UserID: st.id.Subject, Extra: map[string]any{identityKey: st.id}}, nil
		// The Verifier checked exp with its own clock; the SDK's check (time.Now) is off.
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(restore)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := v.VerifyRequest(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		st := &requestState{id: id, authorization: r.Header.Values("Authorization")}
		r = r.WithContext(context.WithValue(assertion.NewContext(r.Context(), id), stateKey{}, st))
		r.Header = r.Header.Clone()
		r.Header.Set("Authorization", "Bearer "+r.Header.Get(assertion.HeaderName))
		withTokenInfo.ServeHTTP(w, r)
	})
}

// IdentityFromRequest returns the identity of the caller of a request that came through
// Handler, or nil.
func IdentityFromRequest(req mcp.Request) *assertion.Identity {
	if req == nil {
		return nil
	}
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	id, _ := extra.TokenInfo.Extra[identityKey].(*assertion.Identity)
	return id
}
