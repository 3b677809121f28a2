package checkpoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/tool"
)

// Background shells outside tool calls: an external agent's terminals
// (ObserveShell), and the shells still followed when a session is rewound
// or forked (finishShells), whose changes since they were last seen are
// captured then. The Watchers that follow shells are listed process-wide
// (watchers) so that Rewind and Fork, which are given a store and not a
// pool, find them.

// watchers are the Watchers of the process that follow a background
// shell. Lock order: a Watcher's mu, then watchers.mu.
var watchers struct {
	mu  sync.Mutex
	set map[*Watcher]struct{}
}

// followLocked follows the shell of key from b (w.mu held).
func (w *Watcher) followLocked(key string, b *baseline) {
	if w.bg == nil {
		w.bg = map[string]*baseline{}
	}
	if len(w.bg) >= maxBaselines {
		return // documented: its later changes are not captured
	}
	w.bg[key] = b
	watchers.mu.Lock()
	if watchers.set == nil {
		watchers.set = map[*Watcher]struct{}{}
	}
	watchers.set[w] = struct{}{}
	watchers.mu.Unlock()
}

// forgetLocked stops following the shell of key (w.mu held).
func (w *Watcher) forgetLocked(key string) {
	delete(w.bg, key)
	if len(w.bg) == 0 {
		watchers.mu.Lock()
		delete(watchers.set, w)
		watchers.mu.Unlock()
	}
}

// Close stops following every background shell (the pool that owns the
// Watcher is closed: its shells are gone).
func (w *Watcher) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.bg {
		w.forgetLocked(k)
	}
}

// ObserveShell is told that the background shell shellID, started by a
// watched call of call's session, was seen outside a tool call (an
// external agent's terminal/* request, or its session's end): what the
// workspace changed since the shell was last seen is captured for call's
// message and tool call, as it was then. With ended, the shell has ended
// and is not followed any more; else it is followed from now. It returns
// what the result of a watched call would say of what was not captured
// ("" when all was, or the shell is not followed).
func (w *Watcher) ObserveShell(ctx context.Context, call tool.Call, shellID string, ended bool) string {
	key := call.SessionID + "\x00" + shellID
	w.mu.Lock()
	b := w.bg[key]
	if b != nil {
		b = b.clone()
		if ended {
			w.forgetLocked(key)
		}
	}
	w.mu.Unlock()
	if b == nil {
		return ""
	}
	now := w.sc.scan(b.root)
	lost := w.catchUp(ctx, b.cs, change(call, b.root), b, now)
	if !ended {
		w.rebase(key, b.root, now)
	}
	var notes []string
	if short := cmp.Or(b.wasShort, now.short); short != "" {
		notes = append(notes, "the workspace scan stopped short ("+short+"): changes past it were not captured")
	}
	return checkpointNote(notes, lost)
}

// rebase makes now the baseline of the shell of key, if it is still
// followed: the files a file tool changed since now was taken stay
// theirs.
func (w *Watcher) rebase(key, root string, now *snapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if b := w.bg[key]; b != nil {
		b.files, b.ign, b.wasShort, b.skip = maps.Clone(now.files), now.ign, now.short, map[string]bool{}
	}
}

// pending are the sessions whose background shells a Watcher of the
// process follows.
func pending() map[string]bool {
	watchers.mu.Lock()
	ws := slices.Collect(maps.Keys(watchers.set))
	watchers.mu.Unlock()
	out := map[string]bool{}
	for _, w := range ws {
		w.mu.Lock()
		for _, b := range w.bg {
			out[b.session] = true
		}
		w.mu.Unlock()
	}
	return out
}

// finishShells takes, for every background shell of the sessions
// (followed by a Watcher of this process), its after-scan now: what
// changed since it was last seen is captured for the session's latest
// message (the shell goes on, followed from now). A rewind or fork that
// calls it first so undoes, or copies, what the shells changed so far.
// What could not be captured is logged: the rewind goes on.
func finishShells(ctx context.Context, st session.Store, sessions []string) error {
	busy := pending()
	var errs []error
	for _, sid := range sessions {
		if !busy[sid] {
			continue
		}
		msgs, err := st.Messages(ctx, sid)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(msgs) == 0 {
			continue // no checkpoint to hold the changes
		}
		call := tool.Call{SessionID: sid, MessageID: msgs[len(msgs)-1].ID}
		watchers.mu.Lock()
		ws := slices.Collect(maps.Keys(watchers.set))
		watchers.mu.Unlock()
		for _, w := range ws {
			w.mu.Lock()
			var shells []string
			for k, b := range w.bg {
				if b.session == sid {
					shells = append(shells, k[len(sid)+1:])
				}
			}
			w.mu.Unlock()
			for _, sh := range shells {
				if note := w.ObserveShell(ctx, call, sh, false); note != "" {
					slog.Warn("checkpoint: a background shell's changes before a rewind", "session", sid, "shell", sh, "note", note)
				}
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("the background shells of the session could not be caught up: %w", errors.Join(errs...))
	}
	return nil
}

// finishLine is finishShells for sid and its descendants.
func finishLine(ctx context.Context, st session.Store, sid string) error {
	if len(pending()) == 0 {
		return nil
	}
	tree, err := session.Subtree(ctx, st, sid)
	if err != nil {
		return err
	}
	ids := make([]string, len(tree))
	for i, s := range tree {
		ids[i] = s.ID
	}
	return finishShells(ctx, st, ids)
}

// touchedAll tells every Watcher of the process that a file was changed
// by other means than its shells (a rewind restored it): the shells'
// baselines forget it.
func touchedAll(root, path string) {
	watchers.mu.Lock()
	ws := slices.Collect(maps.Keys(watchers.set))
	watchers.mu.Unlock()
	for _, w := range ws {
		w.touched(root, path)
	}
}
