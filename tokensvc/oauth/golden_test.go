package oauth

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mcpmesh/gateway/shared/golden"
	"github.com/mcpmesh/gateway/shared/paths"
)

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
		golden.Check(t, tc.file, pretty.Bytes())
	}
}
