package acp

import (
	"context"
	"encoding/json"
	"path/filepath"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/tool/workspace"
)

// clientCaps are the client capabilities of initialize that the tools
// use: fs.readTextFile, fs.writeTextFile and terminal.
type clientCaps struct {
	read, write, terminal bool
}

// parseClientCaps reads the capabilities leniently (as the schema does: a
// value of the wrong type counts as not advertised).
func parseClientCaps(fs, terminal json.RawMessage) clientCaps {
	var caps clientCaps
	var f struct {
		Read  json.RawMessage `json:"readTextFile"`
		Write json.RawMessage `json:"writeTextFile"`
	}
	if json.Unmarshal(fs, &f) == nil {
		caps.read = isTrue(f.Read)
		caps.write = isTrue(f.Write)
	}
	caps.terminal = isTrue(terminal)
	return caps
}

func isTrue(raw json.RawMessage) bool {
	var b bool
	return json.Unmarshal(raw, &b) == nil && b
}

// sessionWorkspace is the workspace of a session whose cwd is an existing
// absolute directory; nil (the pool's workspace) otherwise, logged.
func (c *conn) sessionWorkspace(sid, cwd string) *workspace.Workspace {
	if cwd == "" || !filepath.IsAbs(cwd) {
		c.log.Warn("acp: cwd is not an absolute path; the session uses the pool's workspace", "session", sid, "cwd", cwd)
		return nil
	}
	ws, err := workspace.New(cwd)
	if err != nil {
		c.log.Warn("acp: cwd is not a usable directory; the session uses the pool's workspace", "session", sid, "cwd", cwd, "err", err)
		return nil
	}
	return ws
}

// runContext is the context of one prompt's run on session s: its
// workspace (the session's cwd) and the client's file system and
// terminals as far as the client advertised them. It lends req the
// session's MCP servers' toolsets and keeps the session open across its
// prompts' runs for the hooks (UseHooks).
func (c *conn) runContext(ctx context.Context, s *acpSession, conv *converter, req *pool.RunRequest) context.Context {
	s.mu.Lock()
	ws, mgr := s.ws, s.mcp
	s.mu.Unlock()
	c.mu.Lock()
	caps := c.caps
	c.mu.Unlock()
	if ws != nil {
		ctx = workspace.WithWorkspace(ctx, ws)
		conv.relocate = relocator(ws, c.s.pool.Workspace())
	}
	if mgr != nil {
		req.Toolsets = mgr.Toolsets()
	}
	if caps.read || caps.write {
		ctx = workspace.WithFS(ctx, clientFS{c: c, session: s.id, read: caps.read, write: caps.write})
	}
	if caps.terminal {
		ctx = workspace.WithTerminal(ctx, clientTerminal{c: c, session: s.id, conv: conv})
	}
	conv.terms = c.terms
	req.KeepSession = c.s.keepsSessions()
	return ctx
}

// relocator fixes the locations of a tool_call for a session whose
// workspace is not the pool's. A tool names them from its input before
// it runs, without the run's context, so it resolves a relative path
// against the pool's workspace: the input's file_path (or path) is
// resolved again against the session's; without one, locations outside
// the session's workspace are dropped. The locations of the result (the
// tool_call_update) are the run's own and need no fixing.
func relocator(sess, pool *workspace.Workspace) func([]event.Location, json.RawMessage) []event.Location {
	if sess == nil || pool == nil || sess.Root() == pool.Root() {
		return nil
	}
	return func(locs []event.Location, input json.RawMessage) []event.Location {
		if len(locs) == 0 {
			return nil
		}
		var in struct {
			FilePath string `json:"file_path"`
			Path     string `json:"path"`
		}
		_ = json.Unmarshal(input, &in)
		p := in.FilePath
		if p == "" {
			p = in.Path
		}
		if p != "" && len(locs) == 1 {
			abs, err := sess.Resolve(p)
			if err != nil {
				return nil // the tool will refuse it
			}
			return []event.Location{{Path: abs, Line: locs[0].Line}}
		}
		var out []event.Location
		for _, l := range locs {
			if sess.Contains(l.Path) {
				out = append(out, l)
			}
		}
		return out
	}
}
