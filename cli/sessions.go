package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentpool/agentpool/cli/treeview"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/termtext"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

func init() {
	extraCommands = append(extraCommands, newSessionsCmd)
}

type sessionsFlags struct {
	config string
	db     string
	ext    Extensions // the binary's (its PostgreSQL store)
}

// open opens the store the flags name: --db, else storage.path of the
// manifest (-c, else the one discovered in the current directory), else the user's data
// directory.
func (f *sessionsFlags) open() (session.Store, error) {
	if f.db != "" {
		return openStore(f.db, nil, f.ext.Postgres)
	}
	m, err := loadManifest(f.config)
	if err != nil {
		return nil, err
	}
	return openStore("", m, f.ext.Postgres)
}

// withStore runs fn on the opened store and closes it. fn writes to w,
// stdout made safe for a terminal: JSON output (asJSON) is exact through
// a pipe and has its C1 controls escaped on a terminal (the same JSON
// values); text output always has its controls made visible
// (termtext.Text): it shows stored model and tool output, and --json is
// the exact form.
func (f *sessionsFlags) withStore(cmd *cobra.Command, asJSON bool, fn func(ctx context.Context, st session.Store, w io.Writer) error) error {
	st, err := f.open()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	buf := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	var w io.Writer = termtext.NewWriter(buf)
	if asJSON {
		w = buf
		if isTerminal(cmd.OutOrStdout()) {
			w = termtext.NewJSONWriter(buf)
		}
	}
	err = fn(ctx, st, w)
	return errors.Join(err, buf.Flush(), st.Close())
}

func newSessionsCmd(ext Extensions) *cobra.Command {
	f := sessionsFlags{ext: ext}
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List, show, replay, delete, cancel, rewind and fork sessions",
		Long: "Inspect the session database that `agentpool run` writes: the sessions, their delegation " +
			"trees, conversations and event logs.",
	}
	pf := cmd.PersistentFlags()
	pf.StringVarP(&f.config, "config", "c", "", "manifest whose storage.path names the database (default: agentpool.yaml, agentpool.yml, agents.yml or agents.yaml when present)")
	pf.StringVar(&f.db, "db", "", "session database: a path, :memory:, or a postgres:// URL (default: storage.path or storage.url, else the user data directory)")
	cmd.AddCommand(newSessionsListCmd(&f), newSessionsTreeCmd(&f), newSessionsShowCmd(&f), newSessionsEventsCmd(&f), newSessionsDeleteCmd(&f), newSessionsCancelCmd(&f),
		newSessionsRewindCmd(&f), newSessionsForkCmd(&f))
	// Each opens the store: a PostgreSQL one needs agentpool-full.
	for _, c := range cmd.Commands() {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		if c.Annotations[annotationNeeds] == "" {
			c.Annotations[annotationNeeds] = needsStore
		}
	}
	return cmd
}

// resolveSession finds a session by id or by a unique id prefix.
func resolveSession(ctx context.Context, st session.Store, ref string) (session.Session, error) {
	s, err := st.GetSession(ctx, ref)
	if err == nil || !errors.Is(err, session.ErrNotFound) {
		return s, err
	}
	all, lerr := st.ListSessions(ctx, session.ListOptions{})
	if lerr != nil {
		return s, err
	}
	var match []session.Session
	for _, c := range all {
		if strings.HasPrefix(c.ID, ref) {
			match = append(match, c)
		}
	}
	switch len(match) {
	case 0:
		return s, err
	case 1:
		return match[0], nil
	}
	return s, fmt.Errorf("%q matches %d sessions; give more of the id", ref, len(match))
}

// ---- list ----

func newSessionsListCmd(f *sessionsFlags) *cobra.Command {
	var (
		roots, asJSON bool
		limit         int
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sessions, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withStore(cmd, asJSON, func(ctx context.Context, st session.Store, w io.Writer) error {
				list, err := st.ListSessions(ctx, session.ListOptions{RootsOnly: roots, Limit: limit})
				if err != nil {
					return err
				}
				if asJSON {
					if list == nil {
						list = []session.Session{}
					}
					enc := json.NewEncoder(w)
					enc.SetIndent("", "  ")
					return enc.Encode(list)
				}
				if len(list) == 0 {
					fmt.Fprintln(w, "no sessions")
					return nil
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tAGENT\tSTATUS\tDEPTH\tTOKENS\tCOST\tCREATED\tTITLE")
				for _, s := range list {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", termtext.Line(s.ID), termtext.Line(s.AgentName), termtext.Line(status(s)), s.Depth,
						s.TotalUsage.InputTokens+s.TotalUsage.OutputTokens, money(s.TotalCost),
						s.CreatedAt.Local().Format("2006-01-02 15:04:05"), oneLine(s.Title, 60))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&roots, "roots", false, "only root sessions (those a user started)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many sessions (0: all)")
	return cmd
}

func status(s session.Session) string {
	if s.StopReason != "" && string(s.Status) != string(s.StopReason) {
		return string(s.Status) + "/" + string(s.StopReason)
	}
	return string(s.Status)
}

func money(c float64) string {
	if c == 0 {
		return "-"
	}
	return fmt.Sprintf("$%.4f", c)
}

// oneLine is s on one line with its controls made visible, cut to n
// characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(termtext.Line(s)), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// ---- tree ----

type treeNode struct {
	session.Session
	Children []*treeNode `json:"children"`
	// Forks are the sessions forked from this one (the root only).
	Forks []string `json:"forks,omitempty"`
}

func buildTree(ctx context.Context, st session.Store, rootID string) (*treeNode, error) {
	all, err := session.Subtree(ctx, st, rootID)
	if err != nil {
		return nil, err
	}
	nodes := map[string]*treeNode{}
	var root *treeNode
	for _, s := range all {
		n := &treeNode{Session: s, Children: []*treeNode{}}
		nodes[s.ID] = n
		if p, ok := nodes[s.ParentID]; ok && s.ID != rootID {
			p.Children = append(p.Children, n)
		} else {
			root = n
		}
	}
	return root, nil
}

func newSessionsTreeCmd(f *sessionsFlags) *cobra.Command {
	var asJSON, watch bool
	cmd := &cobra.Command{
		Use:   "tree ID",
		Short: "Show a session's delegation tree: agent, status, stop reason, tool uses, tokens, cost, duration",
		Long: "Show a session's delegation tree, drawn as `agentpool run` draws it live: one line per session with " +
			"its agent, how it was spawned, how it ended, its tool uses, tokens (its subtree's), cost, duration " +
			"and id. Large fan-outs are counted, with the running and failed sessions listed. Its lineage follows: " +
			"the session it was forked from, its rewinds, the sessions forked from it. --json prints every " +
			"session record, nested (forks: the sessions forked from it). --watch follows a session that another process runs, redrawing the tree " +
			"until the session ends (on a terminal; else it prints the tree once the session has ended).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, asJSON, func(ctx context.Context, st session.Store, w io.Writer) error {
				s, err := resolveSession(ctx, st, args[0])
				if err != nil {
					return err
				}
				root, err := buildTree(ctx, st, s.ID)
				if err != nil {
					return err
				}
				lines, forks, err := lineage(ctx, st, s)
				if err != nil {
					return err
				}
				if asJSON {
					root.Forks = forks
					enc := json.NewEncoder(w)
					enc.SetIndent("", "  ")
					return enc.Encode(root)
				}
				if watch {
					return watchStoredTree(ctx, st, s.ID, cmd.OutOrStdout(), w)
				}
				text, _, err := renderStoredTree(ctx, st, s, time.Now(), treeview.Options{})
				if err != nil {
					return err
				}
				if _, err = fmt.Fprintln(w, text); err != nil {
					return err
				}
				for _, l := range lines {
					fmt.Fprintln(w, "· "+l)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tree as nested JSON")
	cmd.Flags().BoolVar(&watch, "watch", false, "follow a running session until it ends")
	return cmd
}

// ---- show ----

func newSessionsShowCmd(f *sessionsFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a session's conversation, with its message ids",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, asJSON, func(ctx context.Context, st session.Store, w io.Writer) error {
				s, err := resolveSession(ctx, st, args[0])
				if err != nil {
					return err
				}
				msgs, err := st.Messages(ctx, s.ID)
				if err != nil {
					return err
				}
				if asJSON {
					if msgs == nil {
						msgs = []session.Message{}
					}
					enc := json.NewEncoder(w)
					enc.SetIndent("", "  ")
					return enc.Encode(msgs)
				}
				spawned, err := spawnedBy(ctx, st, s.ID)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "session %s · %s · %s", s.ID, s.AgentName, status(s))
				if s.ParentID != "" {
					fmt.Fprintf(w, " · child of %s", s.ParentID)
				}
				fmt.Fprintf(w, "\n%s\n", termtext.Line(s.Title))
				for _, m := range msgs {
					printMessage(w, m, spawned)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the messages as JSON")
	return cmd
}

// spawnedBy maps the tool calls of a session to the children they spawned,
// from the session's own event log.
func spawnedBy(ctx context.Context, st session.Store, id string) (map[string][]event.SpawnSessionStart, error) {
	recs, err := st.Events(ctx, id, 0)
	if err != nil {
		return nil, err
	}
	out := map[string][]event.SpawnSessionStart{}
	for _, r := range recs {
		if s, ok := r.Event.(event.SpawnSessionStart); ok && s.ToolCallID != "" {
			out[s.ToolCallID] = append(out[s.ToolCallID], s)
		}
	}
	return out, nil
}

func printMessage(w io.Writer, m session.Message, spawned map[string][]event.SpawnSessionStart) {
	head := string(m.Role)
	if m.Synthetic {
		head += " (injected)"
	}
	if m.AgentName != "" && m.Role == model.RoleAssistant {
		head += " · " + m.AgentName
	}
	if !m.CreatedAt.IsZero() {
		head += " · " + m.CreatedAt.Local().Format("15:04:05")
	}
	if m.ID != "" {
		head += " · " + termtext.Line(m.ID) // for sessions rewind --to and fork --at
	}
	fmt.Fprintf(w, "\n── %s\n", head)
	for _, p := range m.Parts {
		switch p.Kind {
		case model.PartText:
			fmt.Fprintln(w, p.Text)
		case model.PartThinking:
			fmt.Fprintf(w, "💭 %s\n", p.Text)
		case model.PartToolCall:
			fmt.Fprintf(w, "→ %s %s\n", p.ToolName, oneLine(string(p.Args), 200))
			for _, s := range spawned[p.ToolCallID] {
				fmt.Fprintf(w, "  ↳ session %s (@%s, depth %d)\n", s.ChildSessionID, s.SourceName, s.Depth)
			}
		case model.PartToolResult:
			mark := "←"
			if p.IsError {
				mark = "← ✗"
			}
			fmt.Fprintf(w, "%s %s: %s\n", mark, p.ToolName, oneLine(p.Text, 500))
		}
	}
}

// ---- events ----

func newSessionsEventsCmd(f *sessionsFlags) *cobra.Command {
	var asJSON, tree bool
	cmd := &cobra.Command{
		Use:   "events ID",
		Short: "Print a session's event log (--tree: its whole subtree, as its consumer saw it live)",
		Long: "Print a session's own event log. With --tree, the logs of the whole subtree are merged back " +
			"into the one stream the session's consumer saw live: events of descendants wrapped in subagent " +
			"events (docs/spec/EVENTS.md §3, invariant 5). --json prints one event per line (JSONL).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, asJSON, func(ctx context.Context, st session.Store, w io.Writer) error {
				s, err := resolveSession(ctx, st, args[0])
				if err != nil {
					return err
				}
				var evs []event.Event
				var recs []session.Record
				if tree {
					if evs, err = replayTree(ctx, st, s.ID); err != nil {
						return err
					}
				} else {
					if recs, err = st.Events(ctx, s.ID, 0); err != nil {
						return err
					}
					for _, r := range recs {
						evs = append(evs, r.Event)
					}
				}
				if asJSON {
					var buf []byte
					for _, e := range evs {
						if buf, err = event.AppendJSON(buf[:0], e); err != nil {
							return err
						}
						buf = append(buf, '\n')
						if _, err := w.Write(buf); err != nil {
							return err
						}
					}
					return nil
				}
				for i, e := range evs {
					prefix := ""
					if !tree {
						prefix = fmt.Sprintf("%5d  %s  ", recs[i].Seq, recs[i].Time.Local().Format("15:04:05.000"))
					} else if sub, ok := e.(event.Subagent); ok {
						prefix = strings.Repeat("  ", max(0, sub.Depth-s.Depth)) + "[" + sub.SourceName + "] "
						e = sub.Event
					}
					fmt.Fprintf(w, "%s%s\n", prefix, summary(e))
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSONL, one event per line")
	cmd.Flags().BoolVar(&tree, "tree", false, "merge the whole subtree into the stream the session's consumer saw")
	return cmd
}

// summary is the one-line text form of an event.
func summary(e event.Event) string {
	k := string(e.Kind())
	switch e := e.(type) {
	case event.RunStarted:
		return fmt.Sprintf("%s %s (%s)", k, e.AgentName, e.SessionID)
	case event.PartStart:
		s := fmt.Sprintf("%s #%d %s", k, e.Index, e.Part.PartKind)
		if e.Part.ToolName != "" {
			s += " " + e.Part.ToolName
		}
		return s
	case event.PartDelta:
		d := e.Delta.ContentDelta
		if d == "" {
			d = e.Delta.ArgsDelta
		}
		return fmt.Sprintf("%s #%d %q", k, e.Index, d)
	case event.PartEnd:
		return fmt.Sprintf("%s #%d", k, e.Index)
	case event.ToolCallComplete:
		s := fmt.Sprintf("%s %s: %s", k, e.ToolName, oneLine(e.ToolResult, 120))
		if e.IsError {
			s += " (error)"
		}
		return s
	case event.ToolCallProgress:
		return fmt.Sprintf("%s %s %s", k, e.ToolCallID, e.Status)
	case event.StreamComplete:
		return fmt.Sprintf("%s %s: %s", k, e.Message.FinishReason, oneLine(e.Message.Content, 120))
	case event.Custom:
		return fmt.Sprintf("%s %s", k, e.EventType)
	case event.PlanUpdate:
		return fmt.Sprintf("%s (%d entries)", k, len(e.Entries))
	}
	if line := renderLine(e); line != "" {
		return k + " " + line
	}
	return k
}

// replayTree is the stream rootID's consumer saw live (session.ReplayTree).
func replayTree(ctx context.Context, st session.Store, rootID string) ([]event.Event, error) {
	rs, err := session.ReplayTree(ctx, st, rootID)
	if err != nil {
		return nil, err
	}
	out := make([]event.Event, len(rs))
	for i, r := range rs {
		out[i] = r.Event
	}
	return out, nil
}

// ---- delete ----

func newSessionsDeleteCmd(f *sessionsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a session with its whole subtree, messages and events",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, false, func(ctx context.Context, st session.Store, w io.Writer) error {
				// Deleting needs the exact id: no prefixes.
				all, err := session.Subtree(ctx, st, args[0])
				if err != nil {
					return err
				}
				if err := st.DeleteSession(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(w, "deleted %s and %d descendant session(s)\n", args[0], len(all)-1)
				return nil
			})
		},
	}
}

// ---- cancel ----

// newSessionsCancelCmd cancels one running session. A session runs in the
// process that claimed its tree (session.Store.Claim), and this command's
// process runs none: it asks that process through its control socket
// (same user and host; docs/control.md).
func newSessionsCancelCmd(f *sessionsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel one running session: a child alone, a root with its run",
		Long: "Cancel one running session. A child session (task, worker, team member, background task) " +
			"ends aborted with its subtree while its parent goes on; a root session's whole run ends. " +
			"The process that runs it (agentpool run or serve, of this user on this host) is asked " +
			"through its control socket and the command waits up to 10 s for the session to end; " +
			"a process on another host is named, to be cancelled from its front end (see docs/control.md).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, false, func(ctx context.Context, st session.Store, w io.Writer) error {
				s, err := resolveSession(ctx, st, args[0])
				if err != nil {
					return err
				}
				return cancelElsewhere(ctx, st, s, w)
			})
		},
	}
}

// cancelElsewhere cancels s in the process named by its tree's claim,
// through that process's control socket (same user and host), or
// explains why it cannot: s has ended, that process cannot be asked
// (another host, no socket), or no process runs it (its run's process
// ended without closing it).
func cancelElsewhere(ctx context.Context, st session.Store, s session.Session, w io.Writer) error {
	if s.Status != session.StatusRunning {
		return fmt.Errorf("session %s is not running (%s): nothing to cancel", s.ID, s.Status)
	}
	err := st.Claim(ctx, s.ID)
	if re, ok := errors.AsType[*session.RunningError](err); ok {
		msg, asked, err := cancelThrough(ctx, re.Owner, s)
		if asked {
			if err == nil {
				fmt.Fprintln(w, msg)
			}
			return err
		}
		return fmt.Errorf("session %s runs in process %d on host %s, not in this one: cancel it from that process's front end "+
			"(OpenCode or the web view: POST /session/%s/abort; ACP: _agentpool/session/cancel; AG-UI: POST /sessions/%s/cancel); "+
			"it has no control socket on this host to ask it through",
			s.ID, re.Owner.PID, re.Owner.Host, s.ID, s.ID)
	}
	if err != nil {
		return err
	}
	if rerr := st.Release(ctx, s.ID); rerr != nil {
		return rerr
	}
	return fmt.Errorf("session %s is marked running but no process runs it (the process of its run ended): nothing to cancel; the next run of its tree closes it", s.ID)
}
