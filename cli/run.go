package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentpool/agentpool/cli/treeview"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/internal/termtext"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
)

type runFlags struct {
	poolFlags
	agent   string
	output  string
	session string
	approve string
	fast    bool
	// maxTokens and maxCost are the run's budget (--max-tokens,
	// --max-cost).
	maxTokens int64
	maxCost   float64
}

// demoDelay paces the built-in demo when its live tree is drawn: each
// chunk of its test models' answers waits this long, so the run takes
// about two seconds (1.9 s on the 2-core test machine) instead of ~25 ms,
// in which no frame of the tree would be seen.
const demoDelay = 8 * time.Millisecond

func newRunCmd(ext Extensions) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] [AGENT] PROMPT",
		Short: "Run an agent or team on a prompt",
		Long: "Run an agent or team on a prompt. Without --config, the manifest of the current directory is used " +
			"(agentpool.yaml, agentpool.yml, agents.yml or agents.yaml; two of them are an error), else the " +
			"built-in offline demo pool, which run says. A first word that names an agent or team of the " +
			"manifest is the node to run (AgentPool's `run AGENT PROMPT`); so is the first of exactly two words " +
			"that looks like a name, and a name the manifest lacks is then an error; otherwise the words are " +
			"the prompt of the default agent. The words of PROMPT are joined by spaces; " +
			"a PROMPT of - is read from stdin (at most 4 MiB). A PROMPT \"/name args\" runs the Claude Code command name " +
			"(.claude/commands/name.md, the user's or a plugin's), $ARGUMENTS standing for args.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMain(cmd, f, args)
		},
	}
	fl := cmd.Flags()
	f.poolFlags.register(cmd, ext)
	fl.StringVar(&f.agent, "agent", "", "agent or team to run (default: the manifest's default_agent)")
	fl.StringVar(&f.output, "output", "text", "output format: text or jsonl")
	fl.StringVar(&f.session, "session", "", "continue this session with its history")
	fl.Int64Var(&f.maxTokens, "max-tokens", 0, "budget of the run: no model call starts once its model calls (the whole tree's) used this many tokens (input + output); 0: none")
	fl.Float64Var(&f.maxCost, "max-cost", 0, "budget of the run in US dollars, counted for the models that have a price; 0: none")
	fl.BoolVar(&f.fast, "fast", false, "run the built-in demo at full speed (on a terminal it is paced so that its live tree can be seen)")
	fl.StringVar(&f.approve, "approve", "", "how tool calls that ask for approval are answered: ask (on the terminal; the default when stdin and stderr are terminals), "+
		"allow (every one, once, printed) or deny (the default otherwise, saying how to allow the tool; approvals.unattended: allow in the manifest makes it allow)")
	return cmd
}

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	fd, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(fd.Fd()))
}

func runMain(cmd *cobra.Command, f runFlags, args []string) error {
	if f.output != "text" && f.output != "jsonl" {
		return fmt.Errorf("--output must be text or jsonl, not %q", f.output)
	}
	budget := spawn.Budget{Tokens: f.maxTokens, CostUSD: f.maxCost}
	if err := (spawn.Budget{Tokens: f.maxTokens}).Check(); err != nil {
		return fmt.Errorf("--max-tokens: %w", err)
	}
	if err := (spawn.Budget{CostUSD: f.maxCost}).Check(); err != nil {
		return fmt.Errorf("--max-cost: %w", err)
	}
	reg := hook.New(hook.Options{Logger: slog.Default()})
	// Everything written on stderr but the status tree (which makes its
	// own text safe and draws its own escape sequences) goes through
	// errw: names, errors, tool inputs and warnings come from models,
	// tools and the store, and a control sequence in them is shown, never
	// acted on, whether stderr is a terminal or not.
	stderr := cmd.ErrOrStderr()
	errw := termtext.NewWriter(stderr)
	// Tools whose policy is "ask" go to the approval broker (made once
	// the manifest is loaded); the observer, first in the chain, sees
	// every answer and shows each denial.
	in, inFile := cmd.InOrStdin().(*os.File)
	terminal := inFile && term.IsTerminal(int(in.Fd())) && isTerminal(stderr)
	observer := &approvalObserver{}
	reg.OnApproval.Use(observer.observe, hook.WithName("run-approvals"))
	// Warnings of the runtime (a limit that refused a spawn, a store that
	// failed) go to stderr; stdout is the answer or the event stream.
	warnings := &warningWriter{w: errw}
	defer warnings.release()
	log := slog.New(slog.NewTextHandler(warnings, &slog.HandlerOptions{Level: slog.LevelWarn}))
	drawTree := f.output == "text" && useTree(isTerminal(stderr), os.Getenv)
	if drawTree && !f.fast {
		f.demoDelay = demoDelay
	}
	// The broker is made from the manifest before the engine: on Temporal
	// the workers' asks come back to it (durable.Approver).
	approvals := brokerAndRules(&f.poolFlags, log)
	registry := newRegistry() // its HumanDesk gets the terminal below
	p, tel, err := openPoolTelemetry(f.poolFlags, pool.Options{Hooks: reg, Logger: log, Registry: registry})
	if err != nil {
		return err
	}
	defer shutdownTelemetry(tel, log) // last: flushes the spans of every run
	defer p.Close()
	if (budget.Tokens != 0 || budget.CostUSD != 0) && p.Manifest().Execution.Temporal() {
		// Budgets are kept in this process; the workflows would spend
		// past them without a word (docs/control.md, Budgets).
		return errors.New("--max-tokens and --max-cost are not enforced with execution.engine: temporal; run the manifest in process to cap a run")
	}
	defer listenControl(p, log)() // sessions cancel, from another process
	defer closeHooks(reg)         // first: background hooks still record into the store
	source := manifestName(f.config)
	node, words := "", args
	if f.session == "" || f.agent != "" { // a session runs its own agent
		if node, words, err = nodeArgs(p.Manifest(), source, f.agent, args); err != nil {
			return err
		}
	}
	prompt, err := promptArg(words, cmd.InOrStdin())
	if err != nil {
		return err
	}
	if source == builtInName {
		fmt.Fprintln(errw, "agentpool: "+builtInNotice())
	}
	// "/name args" runs a Claude Code command (.claude/commands/name.md)
	// when one has that name; any other prompt is the prompt.
	prompt, _ = p.ExpandCommand(prompt)
	mode, modeWhy, err := approveMode(f.approve, terminal, p.Manifest())
	if err != nil {
		return err
	}
	// After the manifest's hooks: PermissionRequest hooks answer before
	// anyone is asked.
	broker, rules := approvals()
	reg.UseBroker(broker)

	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, stopSignals...)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// A closed stdout fails the write (pipeWriter then cancels the run)
	// rather than kill the process with SIGPIPE. Notify, not Ignore: an
	// ignored SIGPIPE would be inherited by the commands the tools start.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	defer signal.Stop(pipes)

	// The answer on stdout is exact when stdout is a file or a pipe (it
	// may be kept), and shown with its controls made visible on a
	// terminal; JSONL on a terminal has its C1 controls escaped (the same
	// JSON values).
	var stdoutW io.Writer = &pipeWriter{w: cmd.OutOrStdout(), cancel: cancel}
	stdoutTerminal := isTerminal(cmd.OutOrStdout())
	if stdoutTerminal && f.output == "jsonl" {
		stdoutW = termtext.NewJSONWriter(stdoutW)
	}
	stdout := bufio.NewWriterSize(stdoutW, 64<<10)
	defer stdout.Flush()
	var sink event.Sink
	var js *jsonlSink
	var view *liveView
	var tree *treeview.Live
	switch f.output {
	case "jsonl":
		js = newJSONLSink(stdout, errw)
		defer js.stop()
		sink = js
	default:
		if drawTree {
			tree = treeview.Start(stderr, nil)
			sink = tree
			warnings.hold() // written after the tree's last frame
		} else {
			view = newLiveView(errw)
			sink = view
		}
	}
	// Questions and denials are not drawn over by the tree, nor cut by
	// the live view's lines.
	printer := &approvalPrinter{w: errw}
	switch {
	case tree != nil:
		printer.view = tree.Locker()
	case view != nil:
		printer.view = &view.mu
	}
	if f.session != "" {
		if node, err = resumeNode(ctx, p, f.session, node, source, errw); err != nil {
			return err
		}
	}
	// ✗ lines for failed and denied tool calls and refused spawns, above
	// the tree or among the plain lines; jsonl's stream carries them.
	var report func(string)
	if f.output == "text" {
		report = printer.println
	}
	out := newOutcome(sink, report)
	path := requestPath(p.Store())
	// The terminal's lines are read once something asks: an approval, or
	// an input model's turn (a person answers as an agent); on anything
	// else than a terminal nobody can answer such a turn, which fails
	// saying so (human.ErrNobodyToAsk).
	lines := sync.OnceValue(func() <-chan string { return readLines(in) })
	if terminal {
		detach := registry.HumanDesk().Attach(&terminalHuman{lines: lines, printer: printer, store: p.Store()})
		defer detach()
	}
	denyWhy, stopApprovals := "", func() {}
	switch mode {
	case approveAsk:
		stopApprovals = startTerminalApprovals(broker, lines(), printer, path, rules.LocalFile()).Close
	case approveAllow:
		stopApprovals = broker.Attach(modeWhy, allowEvery(broker, printer, path, modeWhy))
	default:
		denyWhy = modeWhy
	}
	defer stopApprovals() // once more is a no-op
	observer.set(printer, p.Store(), denyWhy, rules.LocalFile(), out.deny)
	// In this process, or on the pool's Temporal workers (execution:
	// {engine: temporal}, see openPoolTelemetry): the same stream either way.
	res, err := p.RunSink(ctx, pool.RunRequest{Node: node, Prompt: prompt, SessionID: f.session, Budget: budget}, out)
	stopApprovals() // before the tree's last frame: no question is left on the terminal
	if js != nil {
		js.stop() // no flush of its own may run beside the ones below
	}
	if err != nil {
		if tree != nil {
			tree.Stop()
			warnings.release()
		}
		return err
	}
	if tree != nil || view != nil {
		if tree != nil {
			tree.Finish(treeSummary(res))
			warnings.release()
		}
		printSummary(errw, res)
		if out := res.Result.Output; out != "" {
			if stdoutTerminal {
				out = termtext.Text(out)
				if os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb" {
					out = renderMarkdown(out)
				}
			}
			fmt.Fprintln(stdout, out)
		}
	}
	if err := stdout.Flush(); errors.Is(context.Cause(ctx), errStdoutClosed) || errors.Is(err, syscall.EPIPE) {
		return &exitError{code: exitStdoutClosed, msg: fmt.Sprintf("run stopped: %v (session %s: %s)", errStdoutClosed, res.SessionID, res.Result.StopReason)}
	}
	switch res.Result.StopReason {
	case event.StopCompleted, event.StopMaxTokens:
		if msg := out.summary(); msg != "" {
			return &exitError{code: exitIncomplete, msg: msg}
		}
		return nil
	case event.StopAborted:
		return &exitError{code: 130, msg: "run cancelled"}
	case event.StopBudget:
		return &exitError{code: 1, msg: fmt.Sprintf("run stopped: %v", res.Result.Err)}
	default:
		msg := string(res.Result.StopReason)
		if res.Result.Err != nil {
			msg = res.Result.Err.Error()
		}
		return &exitError{code: 1, msg: "run failed: " + msg}
	}
}
