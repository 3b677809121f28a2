package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/agentpool/agentpool/checkpoint"
	"github.com/agentpool/agentpool/internal/termtext"
	"github.com/agentpool/agentpool/session"
)

// ---- rewind ----

func newSessionsRewindCmd(f *sessionsFlags) *cobra.Command {
	var (
		to                       string
		code, conversation, both bool
		asJSON, undo             bool
	)
	cmd := &cobra.Command{
		Use:   "rewind ID --to MESSAGE | --undo",
		Short: "Take a session back to just before one of its messages: its files, its conversation, or both",
		Long: "Take a session back to just before one of its messages (`sessions show` prints their ids). " +
			"--code restores every file changed from that message on, by the session and by the sessions it " +
			"spawned from there, byte for byte as it was (a file created since is removed). --conversation cuts " +
			"the conversation back to the messages before it; the whole conversation is first copied into a new " +
			"session (a fork), so the original stays reachable. --both (the default) does both. The session must " +
			"not be running. --undo takes the session's last rewind back: the files as they were just before it, " +
			"and the messages it cut (if the session has not gone on since). See docs/checkpoints.md.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := rewindMode(code, conversation, both)
			if err != nil {
				return err
			}
			return f.withStore(cmd, asJSON, func(ctx context.Context, st session.Store, w io.Writer) error {
				s, err := resolveSession(ctx, st, args[0])
				if err != nil {
					return err
				}
				if undo == (to != "") {
					return errors.New("give --to MESSAGE (the message to go back to just before) or --undo")
				}
				var res checkpoint.Result
				if undo {
					res, err = checkpoint.Undo(ctx, st, s.ID)
				} else {
					res, err = checkpoint.Rewind(ctx, st, s.ID, to, mode)
				}
				if err != nil && !errors.Is(err, checkpoint.ErrRestore) {
					return err
				}
				if asJSON {
					enc := json.NewEncoder(w)
					enc.SetIndent("", "  ")
					return errors.Join(enc.Encode(res), err)
				}
				if undo {
					fmt.Fprintf(w, "undid the rewind of %s to before message %s (%s)\n", res.Session, res.To, res.Mode)
				} else {
					fmt.Fprintf(w, "rewound %s to before message %s (%s)\n", res.Session, res.To, res.Mode)
				}
				for _, file := range res.Files {
					line := fmt.Sprintf("  %s %s", file.Action, file.Path)
					if file.Err != "" {
						line += ": " + file.Err
					}
					fmt.Fprintln(w, termtext.Line(line))
				}
				if !undo && mode != checkpoint.Conversation && len(res.Files) == 0 {
					fmt.Fprintln(w, "  no file was changed from that message on")
				}
				if res.PutBack > 0 {
					fmt.Fprintf(w, "put back %d message(s)\n", res.PutBack)
				}
				if res.Fork != "" && !undo {
					fmt.Fprintf(w, "removed %d message(s); the conversation as it was is session %s\n", res.Removed, res.Fork)
				}
				return err
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&to, "to", "", "the message to go back to just before (an id `sessions show` prints)")
	fl.BoolVar(&code, "code", false, "restore the files only")
	fl.BoolVar(&conversation, "conversation", false, "cut the conversation only")
	fl.BoolVar(&both, "both", false, "restore the files and cut the conversation (the default)")
	fl.BoolVar(&undo, "undo", false, "take the last rewind back")
	fl.BoolVar(&asJSON, "json", false, "print what was done as JSON")
	cmd.MarkFlagsMutuallyExclusive("code", "conversation", "both", "undo")
	cmd.MarkFlagsMutuallyExclusive("to", "undo")
	return cmd
}

func rewindMode(code, conversation, both bool) (checkpoint.Mode, error) {
	switch {
	case code:
		return checkpoint.Code, nil
	case conversation:
		return checkpoint.Conversation, nil
	}
	return checkpoint.Both, nil
}

// ---- fork ----

func newSessionsForkCmd(f *sessionsFlags) *cobra.Command {
	var (
		at     string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "fork ID [--at MESSAGE]",
		Short: "Copy a session's conversation (up to a message) into a new session that goes on independently",
		Long: "Copy a session's conversation into a new root session: all of it, or with --at the messages " +
			"before that one (`sessions show` prints their ids). Any session can be forked, a child included; " +
			"the fork is of the same agent, goes on with `agentpool run --session FORK`, and `sessions tree` " +
			"shows where it came from. See docs/checkpoints.md.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, asJSON, func(ctx context.Context, st session.Store, w io.Writer) error {
				s, err := resolveSession(ctx, st, args[0])
				if err != nil {
					return err
				}
				fs, err := checkpoint.Fork(ctx, st, s.ID, at)
				if err != nil {
					return err
				}
				if asJSON {
					enc := json.NewEncoder(w)
					enc.SetIndent("", "  ")
					return enc.Encode(fs)
				}
				where := "its whole conversation"
				if at != "" {
					where = "before message " + at
				}
				fmt.Fprintf(w, "forked %s (%s) into %s\n", s.ID, where, fs.ID)
				fmt.Fprintf(w, "go on with: agentpool run --session %s --agent %s PROMPT\n", fs.ID, fs.AgentName)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&at, "at", "", "fork before this message (default: the whole conversation)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the new session as JSON")
	return cmd
}

// ---- lineage (sessions tree) ----

// lineage describes where s came from and what came of it: the session
// it was forked from, its rewinds, and the sessions forked from it.
func lineage(ctx context.Context, st session.Store, s session.Session) ([]string, []string, error) {
	var lines []string
	if from, ok := s.Metadata[checkpoint.MetaFork].(map[string]any); ok {
		src, _ := from["from"].(string)
		at, _ := from["at"].(string)
		what := "forked from " + src
		if r, _ := from["reason"].(string); r == "rewind" {
			what = "the conversation of " + src + " before its rewind"
		} else if at != "" {
			what += ", before message " + at
		}
		lines = append(lines, what)
	}
	if list, ok := s.Metadata[checkpoint.MetaRewind].([]any); ok {
		for _, e := range list {
			m, _ := e.(map[string]any)
			line := fmt.Sprintf("rewound to before %v (%v) at %v", m["to"], m["mode"], m["at"])
			if fork, ok := m["fork"].(string); ok {
				line += "; the conversation as it was: " + fork
			}
			lines = append(lines, line)
		}
	}
	all, err := st.ListSessions(ctx, session.ListOptions{RootsOnly: true})
	if err != nil {
		return nil, nil, err
	}
	var forks []string
	for i := len(all) - 1; i >= 0; i-- { // oldest first
		c := all[i]
		if from, ok := c.Metadata[checkpoint.MetaFork].(map[string]any); ok && from["from"] == s.ID {
			forks = append(forks, c.ID)
			line := "fork " + c.ID
			if at, _ := from["at"].(string); at != "" {
				line += " (before message " + at + ")"
			}
			if r, _ := from["reason"].(string); r == "rewind" {
				line += " (kept by a rewind)"
			}
			lines = append(lines, line)
		}
	}
	return lines, forks, nil
}
