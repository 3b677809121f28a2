package opencode

import (
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/agentpool/agentpool/server/opencode/internal/wire"
)

// The prompt budget. A prompt holds memory from the moment its body is
// read (the body, then its text) until its run ends, so every prompt is
// counted for that whole time, the running one as much as those that
// wait: per session at most MaxSessionPrompts prompts and
// MaxSessionPromptBytes bytes, on the server MaxPrompts prompts and
// MaxPromptBytes bytes. A prompt's weight is its body's size in bytes,
// reserved before the body is read (Content-Length, else the most a body
// may be) so that bodies being received are counted too, then set to what
// arrived. Before this, only waiting prompts were counted: 80 sessions
// with one 7 MiB running prompt each held 2 GB.

// promptBudget counts what the prompts hold, by session and on the
// server. Its lock is taken once or twice per prompt (admission, the
// body's size, the run's end), never per event: the server's bounds need
// one count of all sessions, which a lock per session cannot give.
type promptBudget struct {
	opts *Options // the bounds: Max(Session)Prompt(Byte)s

	mu     sync.Mutex
	held   heldPrompts             // the budget in use
	heldBy map[string]*heldPrompts // ... by session, sessions holding prompts only
}

func newPromptBudget(opts *Options) *promptBudget {
	return &promptBudget{opts: opts, heldBy: map[string]*heldPrompts{}}
}

// promptHold is what one prompt holds of the budget. Guarded by
// promptBudget.mu.
type promptHold struct {
	sid      string
	bytes    int
	released bool
}

// promptRefused is why a prompt did not get its hold: 413 when it could
// never fit (it is larger than a bound), 429 when it does not fit now.
type promptRefused struct {
	status int
	msg    string
}

func (e *promptRefused) Error() string { return e.msg }

// heldPrompts is what the prompts of one session hold. Guarded by
// promptBudget.mu.
type heldPrompts struct {
	prompts, bytes int
}

// holdPrompt reserves room for a prompt of the given weight in session
// sid, or says why there is none.
func (s *promptBudget) hold(sid string, bytes int) (*promptHold, *promptRefused) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := &promptHold{sid: sid}
	if err := s.fitsLocked(h, bytes, true); err != nil {
		return nil, err
	}
	s.addLocked(h, bytes, 1)
	return h, nil
}

// resizeHold sets the weight of h to what its body turned out to be: less
// than reserved always fits, more must fit as a new prompt would.
func (s *promptBudget) resize(h *promptHold, bytes int) *promptRefused {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bytes > h.bytes {
		if err := s.fitsLocked(h, bytes, false); err != nil {
			return err
		}
	}
	s.addLocked(h, bytes-h.bytes, 0)
	return nil
}

// release gives h's room back; a second release does nothing.
func (s *promptBudget) release(h *promptHold) {
	if h == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.released {
		return
	}
	s.addLocked(h, -h.bytes, -1)
	h.released = true
}

// inSession is what the prompts of session sid hold now.
func (s *promptBudget) inSession(sid string) heldPrompts {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.heldBy[sid]; h != nil {
		return *h
	}
	return heldPrompts{}
}

// inUse is what all prompts hold now.
func (s *promptBudget) inUse() heldPrompts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// addLocked adds bytes and prompts to h, its session's and the server's
// counts. s.mu is held.
func (s *promptBudget) addLocked(h *promptHold, bytes, prompts int) {
	h.bytes += bytes
	s.held.bytes += bytes
	s.held.prompts += prompts
	sh := s.heldBy[h.sid]
	if sh == nil {
		sh = &heldPrompts{}
		s.heldBy[h.sid] = sh
	}
	sh.bytes += bytes
	sh.prompts += prompts
	if sh.prompts == 0 {
		delete(s.heldBy, h.sid)
	}
}

// fitsLocked checks that h, a new prompt (isNew) or one held already,
// fits with a weight of bytes in its session and on the server. s.mu is
// held.
func (s *promptBudget) fitsLocked(h *promptHold, bytes int, isNew bool) *promptRefused {
	o := s.opts
	switch {
	case bytes > o.MaxSessionPromptBytes:
		return &promptRefused{http.StatusRequestEntityTooLarge, fmt.Sprintf(
			"a prompt of %d bytes is larger than the %d bytes the prompts of one session may hold", bytes, o.MaxSessionPromptBytes)}
	case bytes > o.MaxPromptBytes:
		return &promptRefused{http.StatusRequestEntityTooLarge, fmt.Sprintf(
			"a prompt of %d bytes is larger than the %d bytes the prompts on this server may hold", bytes, o.MaxPromptBytes)}
	}
	// What the others hold: the session's and the server's counts but h.
	var session heldPrompts
	if sh := s.heldBy[h.sid]; sh != nil {
		session = *sh
	}
	server := s.held
	if !isNew {
		session.prompts, session.bytes = session.prompts-1, session.bytes-h.bytes
		server.prompts, server.bytes = server.prompts-1, server.bytes-h.bytes
	}
	const retry = ": wait for them to run, or abort the session"
	switch {
	case session.prompts+1 > o.MaxSessionPrompts:
		return &promptRefused{http.StatusTooManyRequests, fmt.Sprintf(
			"session %s already holds %d prompts (running, waiting or being received), the most allowed per session"+retry, h.sid, session.prompts)}
	case session.bytes+bytes > o.MaxSessionPromptBytes:
		return &promptRefused{http.StatusTooManyRequests, fmt.Sprintf(
			"the prompts of session %s already hold %d bytes; with this one (%d bytes) they would pass the bound of %d bytes per session"+retry,
			h.sid, session.bytes, bytes, o.MaxSessionPromptBytes)}
	case server.prompts+1 > o.MaxPrompts:
		return &promptRefused{http.StatusTooManyRequests, fmt.Sprintf(
			"this server already holds %d prompts (running, waiting or being received), the most allowed: retry when some have run, or abort a session", server.prompts)}
	case server.bytes+bytes > o.MaxPromptBytes:
		return &promptRefused{http.StatusTooManyRequests, fmt.Sprintf(
			"the prompts on this server already hold %d bytes; with this one (%d bytes) they would pass the bound of %d bytes: retry when some have run, or abort a session",
			server.bytes, bytes, o.MaxPromptBytes)}
	}
	return nil
}

// writeRefused answers a prompt that got no room: 429 QueueFullError, or
// 413 in the shape of the other bodies too large.
func writeRefused(w http.ResponseWriter, err *promptRefused) {
	if err.status == http.StatusRequestEntityTooLarge {
		writeJSON(w, err.status, wire.BadRequestError{Name: "BadRequest", Data: wire.BadRequestData{Message: err.msg, Kind: "Body"}})
		return
	}
	writeJSON(w, err.status, wire.QueueFullError{Name: "QueueFullError", Data: wire.ErrorData{Message: err.msg}})
}

// discardBody reads the body of a request refused before it was read,
// keeping none of it (a buffer of 32 KiB at a time, at most MaxBodyBytes,
// within the request's deadline), so that the client, which may still be
// sending it, gets the answer: closing the connection on an unread body
// would reset it, and many clients then lose the answer.
func discardBody(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
}

// expectedBodySize is what to reserve for r's body before reading it: its
// Content-Length (at most MaxBodyBytes, the most that is read of it),
// else the most a body may be (or, when smaller, a prompt).
func (s *promptsAPI) expectedBodySize(r *http.Request) int {
	if r.ContentLength >= 0 {
		return int(min(r.ContentLength, s.opts.MaxBodyBytes))
	}
	return int(min(s.opts.MaxBodyBytes, int64(s.opts.MaxSessionPromptBytes), int64(s.opts.MaxPromptBytes)))
}
