package shell

import "context"

// Background is a background shell that Bash started (run_in_background)
// as seen by a program that drives it itself instead of a model calling
// BashOutput and KillShell: an external agent's terminal (ACP
// terminal/*, package external/acpagent), which keeps the output it takes
// in a buffer of its own. It is the same shell: the Toolset's bounds,
// process tree and Close apply to it.
type Background struct{ s *bgShell }

// Background returns the background shell id that session started, or
// false when the Toolset knows none (another session's, or forgotten:
// the Toolset keeps the last 64 finished shells).
func (t *Toolset) Background(id, session string) (*Background, bool) {
	s := t.lookup(id, session)
	if s == nil {
		return nil, false
	}
	return &Background{s}, true
}

// ID is the shell's id (bash_N).
func (b *Background) ID() string { return b.s.id }

// Done is closed once the shell has ended and all of its output has been
// buffered (what Take returns next is the rest of it).
func (b *Background) Done() <-chan struct{} { return b.s.done }

// Take returns the output produced since the last Take (or BashOutput)
// and how many bytes before it were dropped because more than 1 MiB
// accumulated unread. The bytes are the command's, not made valid UTF-8.
// A shell in a front end's terminal is asked for its new output first.
func (b *Background) Take(ctx context.Context) ([]byte, int64) {
	if b.s.proc != nil {
		if _, fin, _ := b.s.status(); !fin {
			pctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
			_ = b.s.pull(pctx)
			cancel()
		}
	}
	data, dropped, _ := b.s.take()
	return data, dropped
}

// Exit reports whether the shell has ended and how: its exit code (128+N
// when signal N ended it, -1 when unknown) and the signal's name
// ("SIGTERM"), if one did. Read it before Take: once it reports an end,
// the output taken next is complete.
func (b *Background) Exit() (ended bool, code int, signal string) {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	return b.s.finished, b.s.code, b.s.signal
}

// Kill kills the shell with its whole process tree (SIGTERM, then SIGKILL
// after 2 s), as KillShell does, and returns once it has ended. Killing
// an ended shell does nothing.
func (b *Background) Kill() error { return b.s.stop() }
