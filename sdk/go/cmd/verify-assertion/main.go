// Command verify-assertion verifies a gateway identity assertion (X-Gateway-Assertion).
//
//	verify-assertion -jwks URL -audience HOST [-issuer URL] < assertion
//
// The assertion is read from standard input. On success the verified claims are written to
// standard output as one JSON object and the exit status is 0; otherwise one line saying why
// goes to standard error and the exit status is 1. Without -issuer any non-empty iss is
// accepted (everything else is checked as in package assertion).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mcpmesh/gateway/sdk/go/assertion"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, time.Now))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, now func() time.Time) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintln(stderr, strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", " "))
		return 1
	}
	fs := flag.NewFlagSet("verify-assertion", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	jwks := fs.String("jwks", "", "URL of the gateway's JWKS (https://HOST/.well-known/gateway/jwks.json)")
	audience := fs.String("audience", "", "expected aud: the host the assertion was sent to")
	issuer := fs.String("issuer", "", "expected iss (the gateway's authenticate_service_url); any if empty")
	if err := fs.Parse(args); err != nil {
		return fail("verify-assertion: %v (usage: verify-assertion -jwks URL -audience HOST [-issuer URL] < assertion)", err)
	}
	if fs.NArg() > 0 {
		return fail("verify-assertion: unexpected argument %q", fs.Arg(0))
	}
	v, err := assertion.NewVerifier(assertion.Config{
		JWKSURL: *jwks, Audience: *audience, Issuer: *issuer, AnyIssuer: *issuer == "", Now: now,
	})
	if err != nil {
		return fail("verify-assertion: %v", err)
	}
	in, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
	if err != nil {
		return fail("verify-assertion: read standard input: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := v.Verify(ctx, strings.TrimSpace(string(in)))
	if err != nil {
		return fail("%v", err)
	}
	out, err := json.Marshal(id.Claims)
	if err != nil {
		return fail("verify-assertion: encode claims: %v", err)
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return 0
}
