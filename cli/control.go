package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentpool/agentpool/internal/ctlsock"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
)

// cancelWait bounds how long a cancel asked through the control socket
// waits for the session's run to end before it is answered (the run
// still ends: the answer then says it was asked, not that it ended).
const cancelWait = 10 * time.Second

// listenControl serves p on this process's control socket (package
// ctlsock) until the returned func is called: `agentpool sessions cancel`
// in another process of the same user and host reaches the runs of this
// one. Without a usable socket directory the command still runs; the
// warning says what is lost.
func listenControl(p *pool.Pool, log *slog.Logger) (stop func()) {
	dir, err := ctlsock.Dir()
	if err != nil {
		log.Warn("no control socket: `agentpool sessions cancel` from another process cannot reach this one", "err", err)
		return func() {}
	}
	s, err := ctlsock.Listen(dir, func(ctx context.Context, r ctlsock.Request) ctlsock.Reply {
		return answerControl(ctx, p, r)
	}, log)
	if err != nil {
		log.Warn("no control socket: `agentpool sessions cancel` from another process cannot reach this one", "err", err)
		return func() {}
	}
	return func() { s.Close() }
}

// answerControl does what a control request asks of p.
func answerControl(ctx context.Context, p *pool.Pool, r ctlsock.Request) ctlsock.Reply {
	if r.Op != ctlsock.OpCancel {
		return ctlsock.Reply{Error: fmt.Sprintf("unknown operation %q", r.Op)}
	}
	by := r.By
	if by == "" {
		by = "cli"
	}
	ended, err := p.Cancel(ctx, r.Session, by)
	if err != nil {
		return ctlsock.Reply{Error: err.Error()}
	}
	t := time.NewTimer(cancelWait)
	defer t.Stop()
	select {
	case <-ended:
		return ctlsock.Reply{Ended: true}
	case <-t.C:
	case <-ctx.Done():
	}
	return ctlsock.Reply{}
}

// cancelThrough asks the process owner, which holds s's tree, to cancel
// s through its control socket. ok is false when that process cannot be
// asked (another host, or no socket): the caller explains.
func cancelThrough(ctx context.Context, owner session.Owner, s session.Session) (msg string, ok bool, err error) {
	if owner.Host != session.ThisProcess().Host {
		return "", false, nil
	}
	dir, err := ctlsock.Dir()
	if err != nil {
		return "", false, nil
	}
	rep, err := ctlsock.Ask(ctx, ctlsock.Path(dir, owner.PID), ctlsock.Request{Op: ctlsock.OpCancel, Session: s.ID, By: "cli"})
	switch {
	case errors.Is(err, ctlsock.ErrNoProcess):
		return "", false, nil
	case err != nil:
		return "", true, fmt.Errorf("cancel %s in process %d: %w", s.ID, owner.PID, err)
	case rep.Error != "":
		return "", true, fmt.Errorf("process %d did not cancel session %s: %s", owner.PID, s.ID, rep.Error)
	case rep.Ended:
		return fmt.Sprintf("session %s cancelled (in process %d): its run ended aborted", s.ID, owner.PID), true, nil
	}
	return fmt.Sprintf("session %s cancelled (in process %d); its run had not ended after %s", s.ID, owner.PID, cancelWait), true, nil
}
