package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// StartPythonWhoami runs the Python SDK's example MCP server (sdk/python/examples/
// whoami_server.py: Starlette + uvicorn behind mcpmesh_assertion's ASGI middleware, one tool
// whoami answering with the caller's email) with Debian's python3 ($PYTHON if set), verifying
// assertions against jwks for issuer and audience. It returns the server's base URL and stops
// with the test. The test fails (it does not skip) if `make sdk-deps` has not been run.
func StartPythonWhoami(t testing.TB, jwks, issuer, audience string) string {
	t.Helper()
	py := os.Getenv("PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	sdk := filepath.Join(RepoRoot(t), "sdk", "python")
	cmd := exec.Command(py, filepath.Join(sdk, "examples", "whoami_server.py"),
		"--jwks", jwks, "--issuer", issuer, "--audience", audience)
	cmd.Env = childEnv("PYTHONPATH="+sdk, "PYTHONDONTWRITEBYTECODE=1")
	_, u := startProcess(t, "python whoami server", cmd, func(line string) (string, bool) {
		v, ok := strings.CutPrefix(line, "READY ")
		return strings.TrimSpace(v), ok
	}, 30*time.Second)
	if !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("harness: whoami_server.py printed a bad URL %q", u)
	}
	return u
}
