// The tool_approval side of the registry: the agents' policies, the
// "allow always" answers, and approval/request.

package hook

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/config"
)

// ToolApprovals holds the agents' tool_approval policies (the default of
// tools/pre-execute) and the "allow always" answers given in each session
// (an ask for that session and tool is then answered at once). Safe for
// concurrent use; the two maps have a lock each, as nothing reads or
// writes both at once.
type ToolApprovals struct {
	policyMu sync.Mutex                   // guards policies only
	policies map[string]map[string]string // agent -> tool_approval

	alwaysMu sync.Mutex // guards always only
	always   map[alwaysKey]bool
}

type alwaysKey struct{ session, tool string }

func newToolApprovals() *ToolApprovals {
	return &ToolApprovals{policies: map[string]map[string]string{}, always: map[alwaysKey]bool{}}
}

// Set sets an agent's tool approval policy (the `tool_approval` of the
// manifest: tool name, path.Match pattern or "*" -> allow, ask or deny).
func (a *ToolApprovals) Set(agentName string, policy map[string]string) {
	cp := maps.Clone(policy)
	if cp == nil {
		cp = map[string]string{}
	}
	a.policyMu.Lock()
	a.policies[agentName] = cp
	a.policyMu.Unlock()
}

// ApplyManifest sets the tool approval policy of every agent of m that
// has one.
func (a *ToolApprovals) ApplyManifest(m *config.Manifest) {
	for _, name := range m.AgentOrder {
		if ag := m.Agents[name]; ag != nil && ag.ToolApproval != nil {
			a.Set(name, ag.ToolApproval)
		}
	}
}

// Of returns a copy of an agent's tool approval policy (nil when it has
// none).
func (a *ToolApprovals) Of(agentName string) map[string]string {
	a.policyMu.Lock()
	defer a.policyMu.Unlock()
	return maps.Clone(a.policies[agentName])
}

// Decide returns the decision of an agent's tool approval policy for a
// tool (config.ApprovalAllow when the agent has none).
func (a *ToolApprovals) Decide(agentName, toolName string) string {
	a.policyMu.Lock()
	p := a.policies[agentName] // replaced, never changed, by Set
	a.policyMu.Unlock()
	return config.ToolApprovalFor(p, toolName)
}

// preExecuteDefault is the default of tools/pre-execute: the policy's
// decision.
func (a *ToolApprovals) preExecuteDefault(_ context.Context, in ToolCall) agent.ToolDecision {
	switch a.Decide(in.Agent, in.ToolName) {
	case config.ApprovalDeny:
		return agent.ToolDecision{Action: agent.ToolDeny, Reason: fmt.Sprintf("the tool_approval policy of agent %s denies %s", in.Agent, in.ToolName)}
	case config.ApprovalAsk:
		return agent.ToolDecision{Action: agent.ToolAsk, Reason: fmt.Sprintf("the tool_approval policy of agent %s asks before %s", in.Agent, in.ToolName)}
	default:
		return agent.ToolDecision{Action: agent.ToolAllow}
	}
}

// allowedAlways says whether the session answered "allow always" for the
// tool of key.
func (a *ToolApprovals) allowedAlways(key alwaysKey) bool {
	a.alwaysMu.Lock()
	defer a.alwaysMu.Unlock()
	return a.always[key]
}

// remember keeps an "always" answer for the session and tool of key.
func (a *ToolApprovals) remember(key alwaysKey, d ApprovalDecision) {
	if d.Outcome == AllowedAlways {
		a.alwaysMu.Lock()
		a.always[key] = true
		a.alwaysMu.Unlock()
	}
}

// ask runs approval/request for a call whose pre-execute answer was ask,
// unless the session allowed the tool always: the decision is allow with
// the input to run (input, or the approver's change of it) or deny.
// deferrable and deferred are requestApproval's.
func (r *Registry) ask(ctx context.Context, t agent.ToolInfo, req ApprovalRequest, input []byte, deferrable bool) (d agent.ToolDecision, deferred bool) {
	key := alwaysKey{t.SessionID, t.ToolName}
	if !r.Approvals.allowedAlways(key) {
		a, deferred := r.requestApproval(ctx, req, deferrable)
		if deferred {
			return agent.ToolDecision{}, true
		}
		if !a.Allowed() {
			return denied(a), false
		}
		if len(a.UpdatedInput) > 0 {
			input = cloneRaw(a.UpdatedInput)
		}
		r.Approvals.remember(key, a)
	}
	return agent.ToolDecision{Action: agent.ToolAllow, UpdatedInput: input}, false
}

var _ agent.ApprovalResumer = (*Registry)(nil)

// ResumeApproval implements agent.ApprovalResumer: approval/request runs
// for req, the request a run stored for call t before its process died,
// with its id (ApprovalRequest.RequestID), so that the broker
// (UseBroker) shows it again as it was and stores its answer. An earlier
// "always" answer of the session for the tool answers it at once. The
// decision is PreTool's after an ask: allow, with the input asked about,
// or deny.
func (r *Registry) ResumeApproval(ctx context.Context, t agent.ToolInfo, req approval.Request) agent.ToolDecision {
	d, _ := r.ask(ctx, t, ApprovalRequest{Agent: t.Agent, SessionID: t.SessionID, ToolName: t.ToolName, CallID: t.CallID,
		Input: t.Input, Reason: req.Rule, RequestID: req.ID}, cloneRaw(t.Input), false)
	if d.Action == agent.ToolAllow {
		r.calls.start(callKey{t.SessionID, t.CallID})
	}
	return d
}

// denied is the decision of a tool call whose approval did not allow it.
func denied(a ApprovalDecision) agent.ToolDecision {
	msg := "approval " + a.Outcome
	if a.Reason != "" {
		msg += ": " + a.Reason
	}
	return agent.ToolDecision{Action: agent.ToolDeny, Reason: msg}
}

// RequestApproval runs approval/request. req is snapshotted on entry. Fail
// closed: no listener, an empty or unknown outcome all give Unavailable.
func (r *Registry) RequestApproval(ctx context.Context, req ApprovalRequest) ApprovalDecision {
	d, _ := r.requestApproval(ctx, req, false)
	return d
}

// requestApproval is RequestApproval; with deferrable, a request that no
// listener answered (the chain's end was reached) is reported deferred
// instead of unavailable: the caller's run asks for it itself
// (internal/durablewire.ApprovalEnv).
func (r *Registry) requestApproval(ctx context.Context, req ApprovalRequest, deferrable bool) (ApprovalDecision, bool) {
	req = cloneApproval(req)
	deferred := false
	d := r.OnApproval.Run(ctx, req, func(_ context.Context, req ApprovalRequest) ApprovalDecision {
		if deferrable {
			deferred = true
			return ApprovalDecision{Outcome: Unavailable, Reason: "deferred to the run"}
		}
		return ApprovalDecision{Outcome: Unavailable, Reason: fmt.Sprintf(
			"no approver is available; to run %s without asking, set tool_approval: {%s: allow} on agent %s in the manifest",
			req.ToolName, req.ToolName, req.Agent)}
	})
	if deferred && d.Outcome == Unavailable {
		return ApprovalDecision{}, true
	}
	switch d.Outcome {
	case AllowedOnce, AllowedAlways, Rejected, Cancelled, Unavailable:
	default:
		if d.Outcome != "" {
			r.Logger().Warn("unknown approval outcome; treated as unavailable", "outcome", d.Outcome)
		}
		d.Outcome = Unavailable
	}
	if !d.Allowed() {
		d.UpdatedInput = nil
	}
	return cloneApprovalDecision(d), false
}
