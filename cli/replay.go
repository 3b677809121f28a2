package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/internal/termtext"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/replay"
)

func init() {
	extraCommands = append(extraCommands, newReplayCmd)
}

// exitDiverged is replay's exit status when the replay did not do what
// the recording did (docs/replay.md).
const exitDiverged = 4

type replayFlags struct {
	poolFlags
	model  string
	asJSON bool
}

func newReplayCmd(ext Extensions) *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay SESSION",
		Short: "Re-run a stored session with its recorded model answers and report what changed",
		Long: "Re-run a stored session (a root or a child; an id or a unique prefix, from the database " +
			"--db names) with the model answers it recorded, its tools and hooks running for real in a " +
			"copy of the workspace (or in --workspace), and compare the tool calls, tool results, child " +
			"sessions, stop reasons and answers with the recording (docs/replay.md). With --model, run " +
			"the same prompts against another model and show the answers side by side. Exit status 4 " +
			"when the replay diverged, 1 when it could not run.",
		Args: cobra.ExactArgs(1),
		// The replay runs in this process, whatever the manifest's engine.
		Annotations: map[string]string{annotationNeeds: "in-process"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(cmd, &f, args[0])
		},
	}
	f.register(cmd, ext)
	cmd.Flags().StringVar(&f.model, "model", "", "run the prompts against this model (a model id as a manifest writes it: test, openai:gpt-4o-mini, ...) instead of the recorded answers")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	return cmd
}

// replayReport is what replay prints (--json: as it is).
type replayReport struct {
	Session    string         `json:"session"`
	Agent      string         `json:"agent"`
	Mode       string         `json:"mode"` // cassette or model
	Model      string         `json:"model,omitempty"`
	Runs       []replayRun    `json:"runs"`
	Result     *replay.Result `json:"result,omitempty"` // cassette mode only
	Reproduced bool           `json:"reproduced"`       // cassette mode: no divergence
}

type replayRun struct {
	Prompt   string          `json:"prompt"`
	Recorded *replay.Outcome `json:"recorded"`
	Now      replay.Outcome  `json:"now"`
}

func runReplay(cmd *cobra.Command, f *replayFlags, ref string) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	m, err := loadManifest(f.config)
	if err != nil {
		return err
	}
	rec, err := loadRecording(ctx, f, m, ref)
	if err != nil {
		return err
	}
	var spec *config.ModelSpec
	if f.model != "" {
		if spec, err = modelSpec(f.model); err != nil {
			return err
		}
	}
	if f.workspace == "" {
		dir, err := copyWorkspace(m)
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		f.workspace = dir
	}
	player := replay.NewPlayer(rec)
	reg := newRegistry()
	if spec == nil {
		for _, typ := range reg.ModelTypes() {
			reg.AddModel(typ, func(s config.ModelSpec) (model.Model, error) { return player.Model(s), nil })
		}
	}
	pf := f.poolFlags
	pf.db = memoryDB // the recording is read, never written
	pf.edit = func(m *config.Manifest) error {
		m.Execution = config.Execution{}
		if spec != nil {
			m.DefaultModel = *spec
			for _, a := range m.Agents {
				if a.External == nil {
					a.Model = *spec
				}
			}
		}
		return nil
	}
	errw := termtext.NewWriter(cmd.ErrOrStderr())
	log := slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: slog.LevelError}))
	hooks := hook.New(hook.Options{Logger: log})
	p, shutdown, err := openPool(pf, pool.Options{Registry: reg, Hooks: hooks, Logger: log})
	if err != nil {
		return err
	}
	defer shutdown()
	defer p.Close()
	defer closeHooks(hooks)

	rep := replayReport{Session: rec.Root.ID, Agent: rec.Node, Mode: "cassette", Model: f.model}
	if spec != nil {
		rep.Mode = "model"
	}
	var sink event.Sink = player
	if spec != nil {
		sink = event.Discard // the model's answers are new: nothing to compare
	}
	recorded := rec.Outcomes()
	sid := ""
	for i, prompt := range rec.Prompts {
		req := pool.RunRequest{Node: rec.Node, Prompt: prompt, SessionID: sid}
		if sid != "" {
			req.Node = ""
		}
		res, err := p.RunSink(ctx, req, sink)
		if err != nil {
			return fmt.Errorf("replay run %d: %w", i+1, err)
		}
		sid = res.SessionID
		run := replayRun{Prompt: prompt, Now: replay.Outcome{Stop: string(res.Result.StopReason), Answer: res.Result.Output}}
		if res.Result.Err != nil && res.Result.StopReason != event.StopCompleted {
			run.Now.Stop += ": " + res.Result.Err.Error()
		}
		if i < len(recorded) {
			run.Recorded = &recorded[i]
		}
		rep.Runs = append(rep.Runs, run)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if spec == nil {
		r := player.Result()
		rep.Result, rep.Reproduced = &r, len(r.Divergences) == 0
	}
	if err := writeReplay(cmd, rep, f.asJSON); err != nil {
		return err
	}
	if rep.Result != nil && !rep.Reproduced {
		return &exitError{code: exitDiverged, msg: fmt.Sprintf("replay: %d divergences from session %s", len(rep.Result.Divergences), rec.Root.ID)}
	}
	return nil
}

// loadRecording reads the session ref and its subtree from the store
// that the sessions commands open (--db, else the manifest's).
func loadRecording(ctx context.Context, f *replayFlags, m *config.Manifest, ref string) (*replay.Recording, error) {
	sf := sessionsFlags{config: f.config, db: f.db, ext: f.ext}
	st, err := sf.open()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	s, err := resolveSession(ctx, st, ref)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", ref, err)
	}
	return replay.Load(ctx, st, s.ID, func(node string) string {
		if t := m.Teams[node]; t != nil {
			return t.SharedPrompt
		}
		return ""
	})
}

// modelSpec reads a model id as a manifest's `model:` would.
func modelSpec(name string) (*config.ModelSpec, error) {
	doc := "agents:\n  replay:\n    model: " + strconv.Quote(name) + "\n"
	m, err := config.ParseWith("--model", []byte(doc), manifestOptions())
	if err != nil {
		return nil, fmt.Errorf("--model %q: %w", name, err)
	}
	spec := m.Agents["replay"].Model
	return &spec, nil
}

func writeReplay(cmd *cobra.Command, rep replayReport, asJSON bool) error {
	out := cmd.OutOrStdout()
	buf := bufio.NewWriterSize(out, 64<<10)
	var err error
	if asJSON {
		var w io.Writer = buf
		if isTerminal(out) {
			w = termtext.NewJSONWriter(buf)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = writeReplayText(termtext.NewWriter(buf), rep)
	}
	return errors.Join(err, buf.Flush())
}
