package workspace

import "context"

// FS is a front end's file system (ACP fs/read_text_file and
// fs/write_text_file): it sees the editor's unsaved buffers. Paths are
// absolute and already confined by the caller.
type FS interface {
	// ReadTextFile returns the file's text; line (1-based) and limit (lines)
	// select a range when positive.
	ReadTextFile(ctx context.Context, path string, line, limit int) (string, error)
	// WriteTextFile replaces (or creates) the file with content.
	WriteTextFile(ctx context.Context, path, content string) error
}

// Terminal runs commands in a front end's terminals (ACP terminal/*), so
// the user watches them live in the editor.
type Terminal interface {
	Start(ctx context.Context, req TerminalRequest) (TerminalProcess, error)
}

// TerminalRequest is a command to run in a front end's terminal.
type TerminalRequest struct {
	Command         string
	Args            []string
	Cwd             string // absolute
	Env             map[string]string
	OutputByteLimit int // 0: the front end's default
}

// ExitStatus is how a terminal command ended: Code is nil when it was
// ended by Signal.
type ExitStatus struct {
	Code   *int
	Signal string
}

// TerminalProcess is a command started in a front end's terminal.
type TerminalProcess interface {
	// ID is the front end's terminal id (for embedding it in a tool call).
	ID() string
	// Wait blocks until the command exits or ctx ends.
	Wait(ctx context.Context) (ExitStatus, error)
	// Output returns the output so far, whether it was cut to the byte
	// limit, and the exit status once the command has exited.
	Output(ctx context.Context) (output string, truncated bool, exit *ExitStatus, err error)
	// Kill ends the command; the terminal stays until Release.
	Kill(ctx context.Context) error
	// Release kills the command if it still runs and frees the terminal.
	Release(ctx context.Context) error
}

// A front end's file system and terminals (and its workspace, WithWorkspace)
// are lent in the context because they reach the file and shell tools
// through tool.Tool.Call, an interface that takes a context and whose
// other implementations (a program's tools, MCP) have no use for them,
// and because they belong to one request of one front end's session (an
// ACP client's fs and terminal capabilities), not to the pool or a tool.
type fsKey struct{}
type terminalKey struct{}

// WithFS returns a context whose file tools read and write through fs.
func WithFS(ctx context.Context, fs FS) context.Context {
	return context.WithValue(ctx, fsKey{}, fs)
}

// FSFrom returns the FS attached to ctx, or nil.
func FSFrom(ctx context.Context) FS {
	f, _ := ctx.Value(fsKey{}).(FS)
	return f
}

// WithTerminal returns a context whose shell tool runs commands through t.
func WithTerminal(ctx context.Context, t Terminal) context.Context {
	return context.WithValue(ctx, terminalKey{}, t)
}

// TerminalFrom returns the Terminal attached to ctx, or nil.
func TerminalFrom(ctx context.Context) Terminal {
	t, _ := ctx.Value(terminalKey{}).(Terminal)
	return t
}
