package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
)

type runFlags struct {
	config  string
	agent   string
	output  string
	db      string
	session string
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT",
		Short: "Run an agent or team on a prompt",
		Long: "Run an agent or team on a prompt. Without --config, ./agentpool.yaml is used when present, " +
			"else the built-in offline demo pool.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMain(cmd, f, strings.Join(args, " "))
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.config, "config", "c", "", "manifest file (default ./agentpool.yaml, else the built-in demo)")
	fl.StringVar(&f.agent, "agent", "", "agent or team to run (default: the manifest's default_agent)")
	fl.StringVar(&f.output, "output", "text", "output format: text or jsonl")
	fl.StringVar(&f.db, "db", "", "session database path, or :memory: (default: storage.path, else the user data directory)")
	fl.StringVar(&f.session, "session", "", "continue this session with its history")
	return cmd
}

func runMain(cmd *cobra.Command, f runFlags, prompt string) error {
	if f.output != "text" && f.output != "jsonl" {
		return fmt.Errorf("--output must be text or jsonl, not %q", f.output)
	}
	p, err := openPool(poolFlags{config: f.config, db: f.db}, pool.Options{})
	if err != nil {
		return err
	}
	defer p.Close()

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if ctx == nil {
		ctx = context.Background()
	}

	stdout := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	defer stdout.Flush()
	var sink event.Sink
	var view *liveView
	switch f.output {
	case "jsonl":
		var mu sync.Mutex
		var buf []byte
		sink = event.SinkFunc(func(e event.Event) {
			mu.Lock()
			defer mu.Unlock()
			var err error
			buf, err = event.AppendJSON(buf[:0], e)
			if err != nil {
				fmt.Fprintln(os.Stderr, "agentpool: encode event:", err)
				return
			}
			buf = append(buf, '\n')
			stdout.Write(buf)
			if event.IsLifecycle(e) {
				stdout.Flush()
			}
		})
	default:
		live := false
		if fd, ok := cmd.ErrOrStderr().(interface{ Fd() uintptr }); ok {
			live = term.IsTerminal(int(fd.Fd()))
		}
		view = newLiveView(cmd.ErrOrStderr(), live)
		sink = view
	}
	res, err := p.RunSink(ctx, pool.RunRequest{Node: f.agent, Prompt: prompt, SessionID: f.session}, sink)
	if err != nil {
		return err
	}
	if view != nil {
		view.finish(res)
		if out := res.Result.Output; out != "" {
			fmt.Fprintln(stdout, out)
		}
	}
	switch res.Result.StopReason {
	case event.StopCompleted, event.StopMaxTokens:
		return nil
	case event.StopAborted:
		return &exitError{code: 130, msg: "run cancelled"}
	default:
		msg := res.Result.StopReason
		if res.Result.Err != nil {
			msg = res.Result.Err.Error()
		}
		return &exitError{code: 1, msg: "run failed: " + msg}
	}
}
