package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentpool/agentpool/eval"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
)

func init() {
	extraCommands = append(extraCommands, newEvalCmd)
}

type evalFlags struct {
	manifest, compare string
	jsonOut, junitOut string
	concurrency       int
	allow             []string
}

func newEvalCmd(ext Extensions) *cobra.Command {
	var f evalFlags
	cmd := &cobra.Command{
		Use:   "eval SUITE",
		Short: "Run an evaluation suite: cases × assertions, with a summary, JSON and JUnit XML",
		Long: "Run the cases of an evaluation suite (docs/evals.md) against a manifest, each in a fresh " +
			"workspace with an in-memory store, in parallel, and check their assertions. With --compare, " +
			"run them against a second manifest too and show both side by side. Exit status 1 when a case fails.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEval(cmd, ext, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.manifest, "config", "c", "", "manifest the cases run against (default: the suite's manifest key, else ./agentpool.yaml)")
	fl.StringVar(&f.compare, "compare", "", "a second manifest: run the suite against both and compare")
	fl.StringVar(&f.jsonOut, "json", "", "write the results as JSON to this file")
	fl.StringVar(&f.junitOut, "junit", "", "write the results as JUnit XML to this file")
	fl.IntVar(&f.concurrency, "concurrency", 0, "cases run at once (default: the suite's concurrency, else 4)")
	fl.StringArrayVar(&f.allow, "allow", nil, "run this tool (name or pattern) without asking, for every agent; repeatable")
	return cmd
}

func runEval(cmd *cobra.Command, ext Extensions, f evalFlags, suitePath string) error {
	s, err := eval.Load(suitePath)
	if err != nil {
		return err
	}
	if f.concurrency != 0 {
		if f.concurrency < 0 || f.concurrency > eval.MaxConcurrency {
			return fmt.Errorf("--concurrency must be 1 to %d, got %d", eval.MaxConcurrency, f.concurrency)
		}
		s.Concurrency = f.concurrency
	}
	manifest := f.manifest
	if manifest == "" {
		manifest = s.Manifest
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	run := func(m string) []eval.Result {
		r := &evalRunner{flags: poolFlags{config: m, db: ":memory:", allow: f.allow, ext: ext}}
		return eval.Run(ctx, s, r, caseWorkspace, func(done, total int, res eval.Result) {
			mark := "✓"
			if !res.Pass {
				mark = "✗"
			}
			fmt.Fprintf(errw, "%s [%d/%d] %s (%s)\n", mark, done, total, res.Case, res.Duration.Round(time.Millisecond))
		})
	}
	a := run(manifest)
	var b []eval.Result
	if f.compare != "" {
		b = run(f.compare)
		err = eval.WriteComparison(out, nameOf(manifest), nameOf(f.compare), a, b)
	} else {
		err = eval.WriteTable(out, a)
	}
	if err != nil {
		return err
	}
	name := filepath.Base(suitePath)
	if f.jsonOut != "" {
		if err := writeFileWith(f.jsonOut, func(w io.Writer) error { return eval.WriteJSON(w, append(a, b...)) }); err != nil {
			return err
		}
	}
	if f.junitOut != "" {
		if err := writeFileWith(f.junitOut, func(w io.Writer) error { return eval.WriteJUnit(w, name, append(a, b...)) }); err != nil {
			return err
		}
	}
	if sa, sb := eval.Summarize(a), eval.Summarize(b); sa.Failed+sb.Failed > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("eval: %d of %d cases failed", sa.Failed+sb.Failed, len(a)+len(b))}
	}
	return nil
}

func nameOf(manifest string) string {
	if manifest == "" {
		return "default"
	}
	return filepath.Base(manifest)
}

// writeFileWith writes a file through write; a failed write is an error.
func writeFileWith(path string, write func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(fh); err != nil {
		fh.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return fh.Close()
}

// caseWorkspace makes a case's fresh workspace with its files, written
// through an os.Root of the directory (a case's paths cannot leave it).
func caseWorkspace(c eval.Case) (string, func(), error) {
	dir, err := os.MkdirTemp("", "agentpool-eval-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	root, err := os.OpenRoot(dir)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	defer root.Close()
	for p, content := range c.Files {
		if d := filepath.Dir(p); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				cleanup()
				return "", nil, fmt.Errorf("%s: %w", p, err)
			}
		}
		if err := root.WriteFile(p, []byte(content), 0o644); err != nil {
			cleanup()
			return "", nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return dir, cleanup, nil
}

// evalRunner runs a case in a pool of its own (manifest, in-memory store,
// the case's workspace).
type evalRunner struct{ flags poolFlags }

func (r *evalRunner) open(workspace string) (*pool.Pool, func(), error) {
	f := r.flags
	f.workspace = workspace
	return openPool(f, pool.Options{Logger: slog.New(slog.DiscardHandler)})
}

func (r *evalRunner) Run(ctx context.Context, c eval.Case, workspace string) eval.Outcome {
	p, shutdown, err := r.open(workspace)
	if err != nil {
		return eval.Outcome{Err: err}
	}
	defer shutdown()
	defer p.Close()
	col := &evalCollector{}
	start := time.Now()
	res, err := p.RunSink(ctx, pool.RunRequest{Node: c.Agent, Prompt: c.Prompt}, col)
	out := eval.Outcome{Duration: time.Since(start), Err: err}
	if err != nil {
		return out
	}
	out.Answer, out.Stop = res.Result.Output, res.Result.StopReason
	if res.Result.Err != nil {
		out.Err = res.Result.Err
	}
	out.Usage, out.CostUSD = res.TotalUsage, res.TotalCost
	out.Tools, out.Children = col.lists()
	return out
}

func (r *evalRunner) Judge(ctx context.Context, agent, prompt, workspace string) (string, error) {
	p, shutdown, err := r.open(workspace)
	if err != nil {
		return "", err
	}
	defer shutdown()
	defer p.Close()
	res, err := p.RunSink(ctx, pool.RunRequest{Node: agent, Prompt: prompt}, event.Discard)
	if err != nil {
		return "", err
	}
	if res.Result.StopReason != event.StopCompleted && res.Result.StopReason != event.StopMaxTokens {
		return "", fmt.Errorf("the judge's run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	return res.Result.Output, nil
}

// evalCollector notes the tools called and the children spawned anywhere
// in a run's tree.
type evalCollector struct {
	mu       sync.Mutex
	tools    []string
	children []string
}

func (c *evalCollector) Emit(e event.Event) {
	_, in := event.Unwrap("", e)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch v := in.(type) {
	case event.ToolCallStart:
		c.tools = append(c.tools, v.ToolName)
	case event.SpawnSessionStart:
		c.children = append(c.children, v.SourceName)
	}
}

func (c *evalCollector) lists() (tools, children []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tools, c.children
}
