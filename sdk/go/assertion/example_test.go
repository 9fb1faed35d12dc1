package assertion_test

import (
	"fmt"
	"net/http"

	"github.com/mcpmesh/gateway/sdk/go/assertion"
)

// The example of docs/sdk-go.md: an HTTP application behind the gateway greets the caller.
func ExampleVerifier_Middleware() {
	v, err := assertion.NewVerifier(assertion.Config{
		JWKSURL:  "https://mcp.example.com/.well-known/gateway/jwks.json",
		Issuer:   "https://auth.example.com",
		Audience: "mcp.example.com",
	})
	if err != nil {
		panic(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello", assertion.FromContext(r.Context()).Email)
	})
	_ = http.ListenAndServe // http.ListenAndServe(":8080", v.Middleware(hello))
	_ = v.Middleware(hello)
}
