package config

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/mcpmesh/gateway/shared/tooldigest"
)

// Modes of mcp.server.tool_lock.
const (
	ToolLockEnforce = "enforce"
	ToolLockWarn    = "warn"
)

// validateToolLocks reads the lock file of every route with mcp.server.tool_lock.
func (c *Config) validateToolLocks(e *Error) {
	for i := range c.Routes {
		r := &c.Routes[i]
		if r.MCP == nil || r.MCP.Server == nil || r.MCP.Server.ToolLock == nil {
			continue
		}
		tl := r.MCP.Server.ToolLock
		key := "routes[" + strconv.Itoa(i) + "].mcp.server.tool_lock"
		if f := r.MCP.Server.FilterToolList; f != nil && !*f {
			e.add("routes["+strconv.Itoa(i)+"].mcp.server.filter_tool_list", "false cannot go with tool_lock: the lock is applied to the tools/list answers")
		}
		switch tl.Mode {
		case "":
			tl.Mode = ToolLockEnforce
		case ToolLockEnforce, ToolLockWarn:
		default:
			e.add(key+".mode", "must be enforce or warn, got %q", tl.Mode)
		}
		if tl.File == "" {
			e.add(key+".file", "is required")
			continue
		}
		b, err := os.ReadFile(c.Path(tl.File))
		if err != nil {
			e.add(key+".file", "cannot read: %v", err)
			continue
		}
		d, err := tooldigest.ParseLock(b)
		if err != nil {
			e.add(key+".file", "%s: %v", tl.File, err)
			continue
		}
		tl.digests = d
	}
}

// Path returns p, a path from the configuration, relative to the configuration file's
// directory when the configuration was loaded from a file (Load, ParseDir).
func (c *Config) Path(p string) string {
	if c.dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}
