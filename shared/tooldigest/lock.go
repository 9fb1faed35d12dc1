package tooldigest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// LockVersion is the version of the lock file format.
const LockVersion = 1

// Lock is a tool lock file: the tools of one MCP server as an operator reviewed them. It is
// JSON, written by the toollock command, reviewed and committed:
//
//	{"version": 1, "server": "demo-mcp-server 1.0.0", "tools": [
//	  {"name": "echo", "digest": "sha256:…", "definition": {"description": "…", "inputSchema": {…}, "name": "echo"}}
//	]}
//
// definition, the covered members in JCS form, is there for the reviewer: when present, its
// digest must be the tool's digest.
type Lock struct {
	Version int        `json:"version"`
	Server  string     `json:"server,omitempty"`
	Tools   []LockTool `json:"tools"`
}

// LockTool is one pinned tool.
type LockTool struct {
	Name       string          `json:"name"`
	Digest     string          `json:"digest"`
	Definition json.RawMessage `json:"definition,omitempty"`
}

// NewLock returns the lock of the tools (their JSON objects as tools/list lists them),
// sorted by name.
func NewLock(server string, tools []json.RawMessage) (*Lock, error) {
	l := &Lock{Version: LockVersion, Server: server}
	for i, raw := range tools {
		d, err := Digest(raw)
		if err != nil {
			return nil, fmt.Errorf("tool %d: %w", i, err)
		}
		def, err := coveredMembers(raw)
		if err != nil {
			return nil, fmt.Errorf("tool %d: %w", i, err)
		}
		var name struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &name); err != nil || name.Name == "" {
			return nil, fmt.Errorf("tool %d has no name", i)
		}
		l.Tools = append(l.Tools, LockTool{Name: name.Name, Digest: d, Definition: def})
	}
	slices.SortFunc(l.Tools, func(a, b LockTool) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(l.Tools); i++ {
		if l.Tools[i].Name == l.Tools[i-1].Name {
			return nil, fmt.Errorf("the server lists the tool %q twice", l.Tools[i].Name)
		}
	}
	return l, nil
}

// coveredMembers returns the JCS form of the members the digest covers.
func coveredMembers(raw []byte) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, invalid("a tool is not an object")
	}
	keep := map[string]json.RawMessage{}
	for _, k := range Members {
		if v, ok := m[k]; ok {
			keep[k] = v
		}
	}
	b, err := json.Marshal(keep)
	if err != nil {
		return nil, err
	}
	return Canonical(b)
}

// Marshal returns the lock file text: indented JSON ending in a newline.
func (l *Lock) Marshal() []byte {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		panic(err) // a Lock always encodes
	}
	return append(b, '\n')
}

// ParseLock reads a lock file strictly (unknown members, a wrong version, a duplicated or
// empty name, a malformed digest, a definition whose digest is not the tool's are errors) and
// returns the digests by tool name.
func ParseLock(b []byte) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var l Lock
	if err := dec.Decode(&l); err != nil {
		return nil, errors.New("not a lock file: " + err.Error())
	}
	if dec.More() {
		return nil, errors.New("not a lock file: text after the object")
	}
	if l.Version != LockVersion {
		return nil, fmt.Errorf("version: want %d, got %d", LockVersion, l.Version)
	}
	out := make(map[string]string, len(l.Tools))
	for i, t := range l.Tools {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("tools[%d].name: is required", i)
		case !validDigest(t.Digest):
			return nil, fmt.Errorf("tools[%d].digest: want sha256: and 64 lowercase hex digits, got %q", i, t.Digest)
		}
		if _, dup := out[t.Name]; dup {
			return nil, fmt.Errorf("tools[%d].name: %q is pinned twice", i, t.Name)
		}
		if len(t.Definition) > 0 {
			d, err := Digest(t.Definition)
			if err != nil {
				return nil, fmt.Errorf("tools[%d].definition: %v", i, err)
			}
			if d != t.Digest {
				return nil, fmt.Errorf("tools[%d].definition: its digest is %s, not the tool's digest (edited by hand? run toollock again)", i, d)
			}
		}
		out[t.Name] = t.Digest
	}
	return out, nil
}

func validDigest(d string) bool {
	h, ok := strings.CutPrefix(d, Prefix)
	if !ok || len(h) != 64 {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
