package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/approval/settingsrules"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/session"
)

// newApprovalBroker makes the approval broker of a command's pool (run and
// every serve command): the manifest's approvals block sets how long a
// request waits and the answer when no front end is attached, and the
// permission rules of the project's Claude Code settings (the manifest's
// directory, as for hooks.settings) answer first and keep every "always"
// answer. Rules that are read but not applied are logged.
func newApprovalBroker(m *config.Manifest, files settingsrules.Files, log *slog.Logger) (*approval.Broker, *settingsrules.Store, error) {
	rules, err := settingsrules.Load(files)
	if err != nil {
		return nil, nil, fmt.Errorf("approval rules: %w", err)
	}
	for _, w := range rules.Warnings() {
		log.Warn("approval rules: " + w)
	}
	unattended := approval.RejectOnce
	if m.Approvals.Unattended == config.UnattendedAllow {
		unattended = approval.AllowOnce
	}
	b, err := approval.New(approval.Options{Timeout: m.Approvals.Timeout, Unattended: unattended, Rules: rules, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	return b, rules, nil
}

// brokerFromManifest sets f.approvals so that openPool makes the
// command's approval broker (newApprovalBroker) from the manifest it
// reads, before the engine that needs it (on Temporal the engine shows
// its runs' requests in it); the returned func gives that broker once
// openPool has returned (nil before, or when it failed).
func brokerFromManifest(f *poolFlags, log *slog.Logger) (broker func() *approval.Broker) {
	made := brokerAndRules(f, log)
	return func() *approval.Broker { b, _ := made(); return b }
}

// brokerAndRules is brokerFromManifest that also gives the settings rules
// the broker keeps "always" answers in (run names their file).
func brokerAndRules(f *poolFlags, log *slog.Logger) func() (*approval.Broker, *settingsrules.Store) {
	var (
		b     *approval.Broker
		rules *settingsrules.Store
	)
	f.approvals = func(m *config.Manifest) (*approval.Broker, error) {
		var err error
		b, rules, err = newApprovalBroker(m, f.ruleFiles(m), log)
		return b, err
	}
	return func() (*approval.Broker, *settingsrules.Store) { return b, rules }
}

// The behaviours of run's --approve.
const (
	approveAsk   = "ask"   // on the terminal
	approveAllow = "allow" // every request, once, printed
	approveDeny  = "deny"  // every request, with how to allow it
)

// approveMode is the behaviour run takes: the flag's, else ask on a
// terminal, else the manifest's unattended answer (deny by default).
func approveMode(flag string, terminal bool, m *config.Manifest) (mode, why string, err error) {
	switch flag {
	case approveAsk:
		if !terminal {
			return "", "", fmt.Errorf("--approve ask needs a terminal on stdin and stderr; use --approve allow or --approve deny")
		}
		return approveAsk, "", nil
	case approveAllow, approveDeny:
		return flag, "--approve " + flag, nil
	case "":
	default:
		return "", "", fmt.Errorf("--approve must be ask, allow or deny, not %q", flag)
	}
	switch {
	case terminal:
		return approveAsk, "", nil
	case m.Approvals.Unattended == config.UnattendedAllow:
		return approveAllow, "approvals.unattended: allow", nil
	}
	return approveDeny, "no terminal to ask on", nil
}

// approvalObserver is run's outermost listener on approval/request: it
// sees every answer, whoever gave it (the broker, a settings rule, a
// PermissionRequest hook), prints each denial on stderr and counts it for
// the run's summary. With --approve deny (or no terminal) it gives the
// model and the user the ways to allow the tool.
type approvalObserver struct {
	mu       sync.Mutex // guards the fields set once the pool is open
	printer  *approvalPrinter
	store    session.Store
	denyWhy  string // set in deny mode: why nobody was asked
	saveFile string
	denied   func(callID, name string)
}

func (o *approvalObserver) set(printer *approvalPrinter, store session.Store, denyWhy, saveFile string, denied func(callID, name string)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.printer, o.store, o.denyWhy, o.saveFile, o.denied = printer, store, denyWhy, saveFile, denied
}

func (o *approvalObserver) observe(ctx context.Context, req hook.ApprovalRequest, next hook.Next[hook.ApprovalRequest, hook.ApprovalDecision]) hook.ApprovalDecision {
	d := next(ctx, req)
	if d.Allowed() || d.Outcome == hook.Cancelled || ctx.Err() != nil {
		return d
	}
	o.mu.Lock()
	printer, store, denyWhy, saveFile, denied := o.printer, o.store, o.denyWhy, o.saveFile, o.denied
	o.mu.Unlock()
	if printer == nil {
		return d // not running yet
	}
	if d.Outcome == hook.Unavailable && denyWhy != "" {
		d.Reason = howToAllow(req, denyWhy, saveFile)
	}
	path := agentPath(ctx, store, req.SessionID, req.Agent)
	printer.println(fmt.Sprintf("✗ %s: %s denied: %s", path, approval.Title(req.ToolName, req.Input), d.Reason))
	denied(req.CallID, req.ToolName+" by "+req.Agent)
	return d
}

// howToAllow is the refusal of a request that nobody could be asked
// about: the tool, the agent, why it asks, and every way to allow it.
func howToAllow(req hook.ApprovalRequest, why, saveFile string) string {
	asks := req.Reason
	if asks == "" {
		asks = "a rule asks before " + req.ToolName
	}
	return fmt.Sprintf("%s needs approval (%s) and nobody was asked: %s; to allow it, run agentpool with --allow %s or --approve allow, "+
		"set tool_approval: {%s: allow} on agent %s in the manifest, or add %q to permissions.allow in %s",
		req.ToolName, asks, why, req.ToolName, req.ToolName, req.Agent, req.ToolName, saveFile)
}
