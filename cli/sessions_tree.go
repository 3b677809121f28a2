package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentpool/agentpool/cli/treeview"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// renderStoredTree draws a stored session's delegation tree with the
// renderer of `agentpool run`'s live view: its merged event log is
// replayed into the tree model (at the times the events were stored), and
// a session that is no longer running is finished as its record says.
// Every session is listed (finished ones expanded) with its id, so that
// it can be opened; large fan-outs are still counted, not listed.
// o gives the colour and width; done reports that the session has ended.
func renderStoredTree(ctx context.Context, st session.Store, s session.Session, now time.Time, o treeview.Options) (text string, done bool, err error) {
	recs, err := session.ReplayTree(ctx, st, s.ID)
	if err != nil {
		return "", false, err
	}
	m := treeview.New(s.CreatedAt)
	m.Apply(event.RunStarted{SessionID: s.ID, AgentName: s.AgentName}, s.CreatedAt)
	for _, r := range recs {
		m.Apply(r.Event, r.Record.Time)
	}
	done = s.Status != session.StatusRunning
	if done {
		sum := treeview.Summary{SessionID: s.ID, Stop: storedStop(s), Usage: s.TotalUsage, Cost: s.TotalCost,
			Duration: time.Duration(s.DurationMS) * time.Millisecond}
		if e, ok := s.Metadata["error"].(string); ok {
			sum.Err = e
		}
		m.Finish(sum, s.UpdatedAt)
		now = s.UpdatedAt
	}
	o.Now, o.Expand, o.IDs = now, true, true
	return m.Render(o), done, nil
}

// watchInterval is how often --watch reads the store again.
const watchInterval = 500 * time.Millisecond

// watchStoredTree follows session id, which another process runs, until
// it ends: redrawn in place on a terminal, else printed once when it has
// ended (plain output never holds partial trees).
func watchStoredTree(ctx context.Context, st session.Store, id string, out, w io.Writer) error {
	frame := func(width int, color bool) (string, bool, error) {
		s, err := st.GetSession(ctx, id)
		if err != nil {
			return "", false, err
		}
		return renderStoredTree(ctx, st, s, time.Now(), treeview.Options{Width: width, Color: color})
	}
	if useTree(isTerminal(out), os.Getenv) {
		return treeview.Watch(out, func(width int) (string, bool, error) { return frame(width, true) }, watchInterval)
	}
	for {
		text, done, err := frame(0, false)
		if err != nil {
			return err
		}
		if done {
			_, err = fmt.Fprintln(w, text)
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(watchInterval):
		}
	}
}

// storedStop is the stop reason a stored session ended with; one left
// interrupted by a process that died counts as aborted.
func storedStop(s session.Session) event.StopReason {
	if s.StopReason != "" {
		return s.StopReason
	}
	switch s.Status {
	case session.StatusError:
		return event.StopError
	case session.StatusAborted, session.StatusInterrupted:
		return event.StopAborted
	}
	return event.StopCompleted
}
