// Package golden compares a test's output with a file under testdata/golden, for the wire
// formats whose every byte is a contract: metadata documents, JSON-RPC error bodies,
// authorization records. Run the tests of a package with -update to rewrite its files after a
// deliberate change, then read the diff.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is the -update flag of every test binary that uses this package.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// Check compares got with testdata/golden/name, or with -update rewrites that file.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	CheckFile(t, filepath.Join("testdata", "golden", name), got)
}

// CheckFile compares got with the file at path, or with -update rewrites it: for golden files
// shared by the tests of several packages (a scenario suite run natively and in wasm).
func CheckFile(t testing.TB, path string, got []byte) {
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
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s:\ngot:\n%s\nwant:\n%s\n(check the change, then rewrite it with go test -update)", t.Name(), path, got, want)
	}
}
