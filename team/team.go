package team

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/spawn"
)

// Mode of a team.
type Mode string

// Modes.
const (
	Parallel   Mode = "parallel"
	Sequential Mode = "sequential"
)

// Config configures a team.
type Config struct {
	Name         string
	Description  string
	Mode         Mode
	Members      []string // node names, resolved at run time through the runtime
	SharedPrompt string   // prepended to every member's prompt
	// RequireAll makes every member's success required: a sequential team
	// stops at the first failed member, a parallel one (whose members all
	// run to their end) fails when any member failed. Without it a team
	// fails only when every member failed, and its output names the
	// members that did.
	RequireAll bool
}

// Team is an immutable team definition.
type Team struct{ cfg Config }

var _ spawn.Node = (*Team)(nil)

// New builds a team.
func New(cfg Config) (*Team, error) {
	if cfg.Name == "" {
		return nil, errors.New("team: name is required")
	}
	if cfg.Mode != Parallel && cfg.Mode != Sequential {
		return nil, fmt.Errorf("team %s: unknown mode %q", cfg.Name, cfg.Mode)
	}
	if len(cfg.Members) == 0 {
		return nil, fmt.Errorf("team %s: no members", cfg.Name)
	}
	return &Team{cfg: cfg}, nil
}

// Name implements spawn.Node.
func (t *Team) Name() string { return t.cfg.Name }

// Description implements spawn.Node.
func (t *Team) Description() string { return t.cfg.Description }

// SourceType implements spawn.Node.
func (t *Team) SourceType() event.SourceType {
	if t.cfg.Mode == Parallel {
		return event.SourceTeamParallel
	}
	return event.SourceTeamSequential
}

// ModelID implements spawn.Node; teams have no model of their own.
func (t *Team) ModelID() string { return "" }

// Members returns the member names.
func (t *Team) Members() []string { return append([]string(nil), t.cfg.Members...) }

func (t *Team) memberPrompt(p string) string {
	if t.cfg.SharedPrompt == "" {
		return p
	}
	return t.cfg.SharedPrompt + "\n\n" + p
}

// Run implements spawn.Node.
func (t *Team) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	var res spawn.Result
	if c := inv.Continue; c != nil {
		res = t.continueRun(ctx, inv, c)
	} else {
		res = t.run(ctx, inv)
	}
	switch {
	case res.StopReason == event.StopAborted:
		inv.Sink.Emit(event.RunError{Message: "team cancelled", Code: "aborted", RunID: inv.RunID, AgentName: t.cfg.Name})
	case res.Err != nil:
		inv.Sink.Emit(event.RunError{Message: res.Err.Error(), Code: "team_error", RunID: inv.RunID, AgentName: t.cfg.Name})
	default:
		inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: res.Output, FinishReason: "stop"}})
	}
	return res
}

// run runs the team's members from its prompt.
func (t *Team) run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: t.cfg.Name, ParentSessionID: inv.Session.ParentID})
	var res spawn.Result
	// The members' spawns are taken from the run's budget together, so that
	// a team runs all of its members or none, never whichever came first.
	budget, err := spawn.Reserve(ctx, inv, t.cfg.Name, len(t.cfg.Members))
	switch {
	case err != nil:
		res = t.refuseAll(inv, err)
	case t.cfg.Mode == Parallel:
		res = t.runParallel(ctx, inv, budget)
	default:
		res = t.runSequential(ctx, inv, budget)
	}
	budget.Release(ctx) // what a stopped chain did not use
	return res
}

type memberResult struct {
	name   string
	child  spawn.Child
	err    error // creation failed
	failed bool
}

func (m memberResult) describe() string {
	switch {
	case m.err != nil:
		return fmt.Sprintf("[%s] could not start: %v", m.name, m.err)
	case m.failed && errors.As(m.child.Result.Err, new(*spawn.CancelledError)):
		return fmt.Sprintf("[%s] cancelled: %v", m.name, m.child.Result.Err)
	case m.failed:
		msg := string(m.child.Result.StopReason)
		if m.child.Result.Err != nil {
			msg += ": " + m.child.Result.Err.Error()
		}
		return fmt.Sprintf("[%s] failed (%s)", m.name, msg)
	default:
		return fmt.Sprintf("[%s]\n%s", m.name, m.child.Result.Output)
	}
}

// refuseAll ends a team whose members could not be given the run's
// budget: none is started, each is a spawn_refused event, and the team
// fails.
func (t *Team) refuseAll(inv *spawn.Invocation, err error) spawn.Result {
	parts := make([]string, len(t.cfg.Members))
	for i, name := range t.cfg.Members {
		req := spawn.Request{Mechanism: event.MechanismSpawn}
		req.Node, _ = inv.Runtime.Lookup(name)
		spawn.ReportRefused(inv, req, err)
		parts[i] = memberResult{name: name, err: err}.describe()
	}
	return spawn.Result{Output: strings.Join(parts, "\n\n"), StopReason: event.StopError,
		Err: fmt.Errorf("no member started: %w", err)}
}

func (t *Team) spawnMember(ctx context.Context, inv *spawn.Invocation, budget *spawn.Reservation, name, prompt string) memberResult {
	node, ok := inv.Runtime.Lookup(name)
	if !ok {
		return memberResult{name: name, err: fmt.Errorf("%w: %s", spawn.ErrUnknownNode, name)}
	}
	req := spawn.Request{
		Node: node, Prompt: t.memberPrompt(prompt), Description: fmt.Sprintf("%s member %s", t.cfg.Name, name),
		Mechanism: event.MechanismSpawn, Reservation: budget,
	}
	child, err := spawn.Spawn(ctx, inv, req)
	if err != nil {
		spawn.ReportRefused(inv, req, err)
	}
	r := child.Result
	return memberResult{name: name, child: child, err: err, failed: err == nil && r.StopReason != event.StopCompleted && r.StopReason != event.StopMaxTokens}
}

func (t *Team) runParallel(ctx context.Context, inv *spawn.Invocation, budget *spawn.Reservation) spawn.Result {
	results := make([]memberResult, len(t.cfg.Members))
	// Through the run's Env when it has one: under a durable engine the
	// members are child workflows started side by side.
	spawn.Parallel(ctx, inv, len(t.cfg.Members), func(ctx context.Context, i int) {
		results[i] = t.spawnMember(ctx, inv, budget, t.cfg.Members[i], inv.Prompt)
	})
	return t.parallelResult(ctx, results)
}

// parallelResult is the end of a parallel team whose members' results are
// in.
func (t *Team) parallelResult(ctx context.Context, results []memberResult) spawn.Result {
	var parts []string
	var failures []string
	for _, m := range results {
		parts = append(parts, m.describe())
		if m.err != nil || m.failed {
			failures = append(failures, m.name)
		}
	}
	out := strings.Join(parts, "\n\n")
	switch {
	case ctx.Err() != nil:
		return spawn.Result{Output: out, StopReason: event.StopAborted, Err: context.Cause(ctx)}
	case len(failures) == len(results):
		return spawn.Result{Output: out, StopReason: event.StopError, Err: fmt.Errorf("every member failed: %s", strings.Join(failures, ", "))}
	case len(failures) > 0 && t.cfg.RequireAll:
		return spawn.Result{Output: out, StopReason: event.StopError,
			Err: fmt.Errorf("%d of %d members failed: %s (require_all)", len(failures), len(results), strings.Join(failures, ", "))}
	}
	return spawn.Result{Output: out, StopReason: event.StopCompleted}
}

func (t *Team) runSequential(ctx context.Context, inv *spawn.Invocation, budget *spawn.Reservation) spawn.Result {
	return t.chain(ctx, inv.Prompt, func(ctx context.Context, i int, input string) memberResult {
		return t.spawnMember(ctx, inv, budget, t.cfg.Members[i], input)
	})
}

// chain runs a sequential team's members in order, each given the output
// of the last one that completed (input for the first): member(ctx, i,
// input) is member i's result.
func (t *Team) chain(ctx context.Context, input string, member func(ctx context.Context, i int, input string) memberResult) spawn.Result {
	var failures []string
	for i, name := range t.cfg.Members {
		if ctx.Err() != nil {
			return spawn.Result{Output: input, StopReason: event.StopAborted, Err: context.Cause(ctx)}
		}
		last := member(ctx, i, input)
		if last.err != nil || last.failed {
			failures = append(failures, name)
			if ctx.Err() != nil {
				return spawn.Result{Output: input, StopReason: event.StopAborted, Err: context.Cause(ctx)}
			}
			if t.cfg.RequireAll {
				return spawn.Result{Output: last.describe(), StopReason: event.StopError, Err: fmt.Errorf("member %s failed; the chain stops (require_all)", name)}
			}
			continue
		}
		input = last.child.Result.Output
	}
	if len(failures) == len(t.cfg.Members) {
		return spawn.Result{Output: input, StopReason: event.StopError, Err: fmt.Errorf("every member failed: %s", strings.Join(failures, ", "))}
	}
	return spawn.Result{Output: input, StopReason: event.StopCompleted}
}
