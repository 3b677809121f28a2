package tool

import "context"

// Toolset is a group of tools known only at run time: an MCP server's
// tools, listed once the server has started. An agent asks its toolsets
// for their tools when a run starts; a toolset that fails (a server that
// does not start) costs the run those tools, not the run itself, and the
// failure is reported in the run's event stream.
type Toolset interface {
	// Name identifies the toolset in errors and events ("mcp server git").
	Name() string
	// Tools returns the current tools. It may start what it needs (a
	// server process) on first use and must be safe for concurrent use.
	Tools(ctx context.Context) ([]Tool, error)
}
