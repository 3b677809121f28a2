package tool

import "context"

type extraKey struct{}

// WithExtra returns a context whose agent runs offer tools besides their
// own: the tools a front end attached to one session (for example the MCP
// servers an ACP client named in session/new). Runs of child sessions
// started under ctx see them too. A tool whose name an agent already has
// is not added to that agent (its own tool wins).
func WithExtra(ctx context.Context, tools ...Tool) context.Context {
	if len(tools) == 0 {
		return ctx
	}
	prev := ExtraFrom(ctx)
	all := make([]Tool, 0, len(prev)+len(tools))
	all = append(append(all, prev...), tools...)
	return context.WithValue(ctx, extraKey{}, all)
}

// ExtraFrom returns the tools WithExtra attached to ctx.
func ExtraFrom(ctx context.Context) []Tool {
	t, _ := ctx.Value(extraKey{}).([]Tool)
	return t
}

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

type toolsetsKey struct{}

// WithToolsets is WithExtra for toolsets: a run under ctx asks them for
// their tools when it starts (as it asks the agent's own toolsets), and a
// failing one is reported in the run's stream.
func WithToolsets(ctx context.Context, sets ...Toolset) context.Context {
	if len(sets) == 0 {
		return ctx
	}
	prev := ToolsetsFrom(ctx)
	all := make([]Toolset, 0, len(prev)+len(sets))
	all = append(append(all, prev...), sets...)
	return context.WithValue(ctx, toolsetsKey{}, all)
}

// ToolsetsFrom returns the toolsets WithToolsets attached to ctx.
func ToolsetsFrom(ctx context.Context) []Toolset {
	t, _ := ctx.Value(toolsetsKey{}).([]Toolset)
	return t
}
