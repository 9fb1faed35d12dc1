package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type vectorCase struct {
	Name   string         `json:"name"`
	Token  string         `json:"token"`
	Valid  bool           `json:"valid"`
	Reason string         `json:"reason"`
	Claims map[string]any `json:"claims"`
}

func TestRun_SharedVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Issuer   string          `json:"issuer"`
		Audience string          `json:"audience"`
		Now      int64           `json:"now"`
		JWKS     json.RawMessage `json:"jwks"`
		Cases    []vectorCase    `json:"cases"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(v.JWKS) }))
	defer srv.Close()
	now := func() time.Time { return time.Unix(v.Now, 0) }
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"-jwks", srv.URL, "-audience", v.Audience, "-issuer", v.Issuer},
				strings.NewReader(c.Token+"\n"), &stdout, &stderr, now)
			if !c.Valid {
				lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
				if code != 1 || stdout.Len() != 0 || len(lines) != 1 || !strings.Contains(lines[0], "assertion: "+c.Reason+":") {
					t.Fatalf("exit %d, stdout %q, stderr %q; want 1 and one line naming %q", code, stdout.String(), stderr.String(), c.Reason)
				}
				return
			}
			var claims map[string]any
			dec := json.NewDecoder(&stdout)
			if code != 0 || stderr.Len() != 0 || dec.Decode(&claims) != nil || dec.More() {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
			}
			if claims["email"] != c.Claims["email"] || claims["sub"] != c.Claims["sub"] || claims["aud"] != v.Audience {
				t.Errorf("claims %v, want %v", claims, c.Claims)
			}
		})
	}
}

func TestRun_UsageAndFetchErrors(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no flags", nil, "JWKSURL is required"},
		{"no audience", []string{"-jwks", "http://127.0.0.1:9/"}, "Audience is required"},
		{"unknown flag", []string{"-x"}, "flag provided but not defined"},
		{"unreachable JWKS", []string{"-jwks", dead.URL, "-audience", "a"}, "assertion: jwks: cannot fetch the JWKS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, strings.NewReader("eyJhbGciOiJFUzI1NiIsImtpZCI6ImsifQ.e30.AAAA"), &stdout, &stderr, time.Now)
			if code != 1 || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q, want %q", code, stdout.String(), stderr.String(), tt.want)
			}
		})
	}
}
