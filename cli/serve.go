package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/hook/command"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/httpsec"
	"github.com/agentpool/agentpool/session"
	"github.com/spf13/cobra"
)

// stopSignals end a command that runs the pool (run, serve): its runs are
// cancelled and the pool closed, which also stops the background shells
// and MCP servers the tools started. SIGHUP is among them because a closed
// terminal would otherwise kill the process outright, leaving those
// processes running.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// serveCommands are the protocol servers; each server file appends its
// subcommand in an init func.
var serveCommands []func(Extensions) *cobra.Command

func init() {
	extraCommands = append(extraCommands, newServeCmd)
}

func newServeCmd(ext Extensions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the pool over a protocol (a2a, acp, agui, opencode) or as a web view (web)",
	}
	for _, add := range serveCommands {
		cmd.AddCommand(add(ext))
	}
	return cmd
}

// serveAlias reads AgentPool's names of the servers, serve-acp for serve
// acp and so on, as the serve subcommands (docs/agentpool-compat.md):
// args with serve-NAME first, where serve has a subcommand NAME, become
// serve NAME and the rest. Rewritten, not added as commands: cobra pads
// the help's command list to its longest name, hidden ones included.
func serveAlias(root *cobra.Command, args []string) []string {
	if len(args) == 0 {
		return args
	}
	name, ok := strings.CutPrefix(args[0], "serve-")
	if !ok {
		return args
	}
	sub, _, err := root.Find([]string{"serve", name})
	if err != nil || sub.Name() != name || !sub.HasParent() || sub.Parent().Name() != "serve" {
		return args
	}
	return append([]string{"serve", name}, args[1:]...)
}

// poolFlags are the flags every command that builds a pool shares.
type poolFlags struct {
	config    string
	db        string
	workspace string
	allow     []string
	// worker: the pool runs the workflows of its task queue (agentpool
	// worker) and submits none.
	worker bool
	// ext: the Temporal engine and the telemetry exporters, when this
	// binary has them.
	ext Extensions
	// demoDelay, when set, is the per-chunk delay of the built-in demo's
	// models (run paces the demo so its live tree can be seen); it does
	// not touch a manifest of the user's.
	demoDelay time.Duration
	// approvals, when set, makes the broker the command's front ends
	// attach to, from the manifest (openPool calls it once): a durable
	// engine shows its runs' requests there.
	approvals func(*config.Manifest) (*approval.Broker, error)
	// claude: --setting-sources, --plugin-dir and what they found.
	claude *claudeFlags
	// edit, when set, changes the manifest once loaded and given the
	// Claude Code agents, before anything is built from it (replay: its
	// models, its engine).
	edit func(*config.Manifest) error
}

// register registers the flags and marks cmd as one that builds a pool:
// before it runs, the root checks whether its manifest needs what this
// binary lacks (Extensions.execFullIfNeeded).
func (f *poolFlags) register(cmd *cobra.Command, ext Extensions) {
	f.ext = ext
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	if cmd.Annotations[annotationNeeds] == "" {
		cmd.Annotations[annotationNeeds] = needsManifest
	}
	cmd.Flags().StringVarP(&f.config, "config", "c", "", "manifest file (default: agentpool.yaml, agentpool.yml, agents.yml or agents.yaml in the current directory, else the built-in demo)")
	cmd.Flags().StringVar(&f.db, "db", "", "session database: a path, :memory:, or a postgres:// URL (default: storage.path or storage.url, else the user data directory)")
	f.claude = &claudeFlags{}
	f.claude.register(cmd)
	f.registerTools(cmd)
}

// registerTools registers the flags of the builtin tools.
func (f *poolFlags) registerTools(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.workspace, "workspace", "", "directory the file and shell tools act in (default: the manifest's workspace, else the current directory)")
	cmd.Flags().StringArrayVar(&f.allow, "allow", nil, "run this tool (name or pattern such as \"mcp__*\" or \"*\") without asking, for every agent; repeatable")
}

// applyAllow adds the --allow patterns to every agent's tool_approval.
func applyAllow(m *config.Manifest, patterns []string) error {
	for _, pat := range patterns {
		if _, err := path.Match(pat, ""); err != nil || strings.TrimSpace(pat) == "" {
			return fmt.Errorf("--allow %q: not a tool name or pattern", pat)
		}
		for _, a := range m.Agents {
			if a.ToolApproval == nil {
				a.ToolApproval = map[string]string{}
			}
			a.ToolApproval[pat] = config.ApprovalAllow
		}
	}
	return nil
}

// openPool loads the manifest, opens the store and builds the pool, traced
// when the OTEL_* environment or the manifest's observability block asks
// for it (docs/tracing.md). The caller closes the pool (which flushes and
// closes the store), then calls the returned func, which flushes and stops
// the tracing (a no-op without it).
//
// Hooks: the manifest's tool_approval policies and the command hooks of
// hooks.settings are installed on opts.Hooks when it is a *hook.Registry
// (a server may pass one holding its approval listener), else on a new
// registry; this is the one place they are installed (twice would run
// every hook twice). The caller closes a registry it passed (closeHooks).
// Transcripts of the sessions (the hooks' transcript_path) are written
// next to the session database, or in a temporary directory that goes
// with an in-memory store.
func openPool(f poolFlags, opts pool.Options) (*pool.Pool, func(), error) {
	p, tel, err := openPoolTelemetry(f, opts)
	if err != nil {
		return nil, nil, err
	}
	return p, func() { shutdownTelemetry(tel, opts.Logger) }, nil
}

// openPoolTelemetry is openPool with the OpenTelemetry providers that the
// OTEL_* environment and the manifest's observability block ask for (nil:
// none), given to the pool.
func openPoolTelemetry(f poolFlags, opts pool.Options) (*pool.Pool, Telemetry, error) {
	m, err := loadManifest(f.config)
	if err != nil {
		return nil, nil, err
	}
	if err := applyAllow(m, f.allow); err != nil {
		return nil, nil, err
	}
	if f.demoDelay > 0 && isBuiltIn(f.config) {
		for _, a := range m.Agents {
			a.Model.Delay = f.demoDelay
		}
	}
	if opts.Workspace == "" {
		opts.Workspace = f.workspace
	}
	if err := config.CheckFiles(manifestName(f.config), m); err != nil {
		return nil, nil, err
	}
	// After the check: the files found are not the manifest's to name.
	if err := f.applyClaude(m, opts.Logger); err != nil {
		return nil, nil, err
	}
	if f.edit != nil {
		if err := f.edit(m); err != nil {
			return nil, nil, err
		}
	}
	opts.Commands = append(opts.Commands, f.claude.found.PoolCommands()...)
	reg := opts.Hooks
	if opts.Hooks == nil {
		reg = hook.New(hook.Options{Logger: slog.Default()})
		opts.Hooks = reg
	}
	st, transcripts, err := openPoolStore(f.db, m, f.ext.Postgres)
	if err != nil {
		return nil, nil, err
	}
	if reg != nil {
		if err := command.Install(reg, m, command.Options{Logger: opts.Logger, TranscriptDir: transcripts}); err != nil {
			st.Close()
			return nil, nil, err
		}
	}
	opts.Store = st
	tel, err := f.ext.telemetry(m.Observability)
	if err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("tracing: %w", err)
	}
	tp := tracerProvider(tel)
	if tel != nil {
		opts.TracerProvider, opts.MeterProvider = tp, tel.MeterProvider()
	}
	var broker *approval.Broker
	if f.approvals != nil {
		if broker, err = f.approvals(m); err != nil {
			st.Close()
			shutdownTelemetry(tel, opts.Logger)
			return nil, nil, err
		}
	}
	if m.Execution.Temporal() && !f.worker {
		// The root sessions are submitted to the pool's task queue (the
		// pool closes the client).
		eng, err := f.ext.temporal().Engine(m.Execution, st, opts.Logger, tp, broker)
		if err != nil {
			st.Close()
			shutdownTelemetry(tel, opts.Logger)
			return nil, nil, err
		}
		opts.Engine = eng
	}
	if opts.Registry == nil {
		opts.Registry = newRegistry()
	}
	p, err := pool.New(m, opts)
	if err != nil {
		if c, ok := opts.Engine.(io.Closer); ok {
			c.Close()
		}
		st.Close()
		shutdownTelemetry(tel, opts.Logger)
		return nil, nil, err
	}
	return p, tel, nil
}

// shutdownTelemetry flushes and stops the providers, waiting at most 5 s
// for an exporter that does not answer.
func shutdownTelemetry(tel Telemetry, log *slog.Logger) {
	if tel == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil && log != nil {
		log.Warn("tracing: flush at exit", "err", err)
	}
}

// httpFlags are the flags the HTTP servers (agui, opencode) share: where
// to listen, the bearer token, the CORS origins. See package httpsec.
type httpFlags struct {
	addr     string
	token    string
	cors     []string
	maxConns int
	// waitingScan is how often the server looks for runs that stopped
	// while a call waited for an answer (continueWaiting); 0: at its
	// start only.
	waitingScan time.Duration
}

// minWaitingScan bounds --waiting-scan from below: each look reads the
// store's root sessions and the logs of those that run.
const minWaitingScan = 10 * time.Millisecond

func (f *httpFlags) register(cmd *cobra.Command, defaultAddr string) {
	cmd.Flags().StringVar(&f.addr, "addr", defaultAddr, "address to listen on (host:port); any non-loopback address needs a token")
	cmd.Flags().StringVar(&f.token, "token", "", "bearer token every request must carry (Authorization: Bearer TOKEN); default $"+httpsec.EnvToken+
		" (prefer it: a flag shows in the process list); required to listen on a non-loopback address")
	cmd.Flags().StringSliceVar(&f.cors, "cors-origin", nil, "browser origin (scheme://host:port) allowed to call the server; repeatable, \"*\" for any; default none")
	cmd.Flags().IntVar(&f.maxConns, "max-conns", httpsec.DefaultMaxConns, "connections held at once; more wait until one closes")
	cmd.Flags().DurationVar(&f.waitingScan, "waiting-scan", 30*time.Second, "how often to look for runs whose process died while a tool call waited "+
		"for an approval, and go on with them here (0: only at start)")
}

// tokenValue is the token of --token, else of the environment.
func (f *httpFlags) tokenValue() string {
	if f.token != "" {
		return f.token
	}
	return os.Getenv(httpsec.EnvToken)
}

// listen checks the bind rule (a non-loopback address needs a token) and
// listens.
func (f *httpFlags) listen() (net.Listener, error) {
	if err := httpsec.CheckBind(f.addr, f.tokenValue()); err != nil {
		return nil, err
	}
	return net.Listen("tcp", f.addr)
}

// serveHTTP is what the HTTP servers share: the bind rule (checked before
// anything is opened), the pool, signal handling, the listener and the
// "NAME listening on http://ADDR" line on stderr that scripts and tests
// read the port from.
func serveHTTP(cmd *cobra.Command, f poolFlags, h httpFlags, name string,
	serve func(ctx context.Context, p *pool.Pool, ln net.Listener, logger *slog.Logger, approvals *approval.Broker) error) error {
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := httpsec.CheckBind(h.addr, h.tokenValue()); err != nil {
		return err
	}
	if h.maxConns < 1 {
		return fmt.Errorf("--max-conns must be at least 1, got %d", h.maxConns)
	}
	if h.waitingScan != 0 && h.waitingScan < minWaitingScan {
		return fmt.Errorf("--waiting-scan must be 0 (only at start) or at least %s, got %s", minWaitingScan, h.waitingScan)
	}
	reg := hook.New(hook.Options{Logger: logger})
	// The approval broker is made from the manifest (its approvals block
	// and the project's settings rules) once openPool has read it: a
	// durable engine shows its runs' requests there.
	broker := brokerFromManifest(&f, logger)
	p, shutdown, err := openPool(f, pool.Options{Logger: logger, Hooks: reg})
	if err != nil {
		return err
	}
	defer shutdown() // last: flushes the spans of every run
	defer p.Close()
	defer listenControl(p, logger)() // sessions cancel, from another process
	defer closeHooks(reg)            // first: background hooks still record into the store
	// Tools whose rule is "ask" wait for a front end that attaches to the
	// broker (the OpenCode server does); without one they get the
	// manifest's unattended answer. The broker comes after the manifest's
	// hooks: PermissionRequest hooks answer before anyone is asked.
	approvals := broker()
	reg.UseBroker(approvals)
	defer approvals.Subscribe(logAsked(logger))()

	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, stopSignals...)
	defer stop()

	ln, err := h.listen()
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s listening on http://%s\n", name, ln.Addr())
	return serve(ctx, p, ln, logger, approvals)
}

// logAsked logs each request the broker shows: a server's log says what
// waits for an answer, and its id.
func logAsked(log *slog.Logger) func(approval.Notice) {
	return func(n approval.Notice) {
		if n.Kind == approval.Asked {
			log.Info("approval requested", "request", n.Request.ID, "session", n.Request.SessionID, "agent", n.Request.Agent, "title", n.Request.Title)
		}
	}
}

// approvalReopener is a pool's engine that can show again the approval
// requests of its runs that wait while no process follows them
// (cli/temporalcli: durable.Approver.Reopen).
type approvalReopener interface {
	ReopenApprovals(ctx context.Context) (wait func(), err error)
}

// reopenApprovals shows again, in the broker the front end has attached
// to, the requests of p's runs that wait for an answer (a server started
// again: docs/approvals.md, Durable): on a durable engine, those of its
// runs that no process follows (the engine's ReopenApprovals); in this
// process, those of the runs whose process died while they waited
// (continueWaiting, which looks again every scan, when not 0). Call it
// once the front end is attached, and the returned func (which waits for
// what it started, which ends with ctx) before the pool is closed.
func reopenApprovals(ctx context.Context, p *pool.Pool, log *slog.Logger, scan time.Duration) (wait func()) {
	r, ok := p.Engine().(approvalReopener)
	if !ok {
		return continueWaiting(ctx, p, log, scan)
	}
	wait, err := r.ReopenApprovals(ctx)
	if err != nil {
		log.Warn("show the approval requests of the runs that wait", "err", err)
	}
	return wait
}

// continueWaiting goes on, each in a goroutine, with the runs of p's
// store that stopped while a tool call of their tree waited for an
// approval (pool.Pool.Waiting, Continue): their requests are shown again
// in the broker, and each run goes on once answered. A run another live
// process holds is left to it. It returns once each run's stored events
// reached the pool's watchers (or it did not go on): the server that
// serves afterwards answers its clients from the run's transcript, never
// from a stored turn that the run's live events then show again.
//
// With scan, it looks again every scan until ctx ends: a run whose
// process dies later (another server on the same store, killed while its
// run waits) is claimed here once the store sees that process gone (the
// claim of a dead process does not hold: session.Store.Claim), and goes
// on here. Each look costs what Waiting costs (the store's root sessions,
// the logs of those that run) and a claim per waiting root that no run of
// this pool holds. The returned func waits for the runs and the looking,
// which ctx ends (as it ends the server's own).
func continueWaiting(ctx context.Context, p *pool.Pool, log *slog.Logger, scan time.Duration) (wait func()) {
	var wg sync.WaitGroup
	w := &waitingRuns{p: p, log: log, wg: &wg, others: map[string]bool{}}
	w.look(ctx, slog.LevelWarn)
	if scan > 0 {
		wg.Go(func() {
			t := time.NewTicker(scan)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					w.look(ctx, slog.LevelDebug)
				}
			}
		})
	}
	return wg.Wait
}

// waitingRuns goes on with the waiting runs of a pool (continueWaiting).
type waitingRuns struct {
	p   *pool.Pool
	log *slog.Logger
	wg  *sync.WaitGroup

	mu     sync.Mutex
	others map[string]bool // roots found held by another live process (logged once)
}

// look goes on with each waiting root found now, each in a goroutine of
// wg, and returns once each one's stored events were relayed (or it did
// not go on). A failure to list them is logged at level.
func (w *waitingRuns) look(ctx context.Context, level slog.Level) {
	roots, err := w.p.Waiting(ctx)
	if err != nil && ctx.Err() == nil {
		w.log.Log(ctx, level, "find the runs that wait for an approval", "err", err)
	}
	for _, id := range roots {
		relayed := make(chan struct{})
		shown := sync.OnceFunc(func() { close(relayed) })
		w.wg.Go(func() {
			defer shown()
			w.goOn(ctx, id, shown)
		})
		<-relayed
	}
}

// goOn goes on with root id, if no other live process holds it.
func (w *waitingRuns) goOn(ctx context.Context, id string, relayed func()) {
	res, err := w.p.ContinueRelayed(ctx, id, nil, func() {
		w.log.Info("a run that waited for an approval when its process ended goes on", "session", id)
		relayed()
	})
	switch {
	case errors.Is(err, session.ErrRunning):
		w.mu.Lock()
		first := !w.others[id]
		w.others[id] = true
		w.mu.Unlock()
		if first { // it is looked at again every scan
			w.log.Info("a run that waits for an approval is another process's", "session", id, "err", err)
		}
		return
	case errors.Is(err, pool.ErrNotWaiting):
		w.log.Info("a run that waited for an approval was answered elsewhere", "session", id, "err", err)
		return
	case err != nil:
		w.log.Warn("go on with a run that waited for an approval", "session", id, "err", err)
		return
	}
	w.mu.Lock()
	delete(w.others, id)
	w.mu.Unlock()
	w.log.Info("a continued run ended", "session", id, "stop_reason", res.Result.StopReason)
}
