package oauth

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpmesh/gateway/shared/paths"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// TestMetadata_Golden pins the metadata documents as clients read them (RFC 8414 and
// RFC 9728): a change of a member shows up as a diff of the golden file. Run with -update to
// rewrite them after a deliberate change.
func TestMetadata_Golden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct{ file, url string }{
		{"authorization-server.json", issuer + paths.AuthorizationServerMetadata},
		{"protected-resource-mcp.json", issuer + paths.ProtectedResourceMetadata + "/mcp"},
		{"protected-resource-host.json", issuer + paths.ProtectedResourceMetadata},
		{"protected-resource-solo-host.json", soloIssuer + paths.ProtectedResourceMetadata},
	} {
		rec := e.get(tc.url, "")
		if rec.Code != 200 {
			t.Fatalf("%s: status %d", tc.url, rec.Code)
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, rec.Body.Bytes(), "", "  "); err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		pretty.WriteByte('\n')
		golden(t, filepath.Join("testdata", "golden", tc.file), pretty.Bytes())
	}
}

// golden compares got with the file at path, or rewrites the file with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run Golden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n got: %s\nwant: %s", path, got, want)
	}
}
