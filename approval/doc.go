// Package approval is the broker between the tool calls that need a
// person's approval (a tool_approval rule of "ask", a hook's ask) and the
// front ends that can ask one (the OpenCode TUI, an ACP editor, the web
// view, the terminal). docs/approvals.md describes the whole flow.
//
// A run asks (Broker.Ask) and waits; the broker gives the request an id,
// keeps it pending and tells every subscriber (Notice: asked). A front end
// answers with Broker.Reply: allow once, allow always, reject once or
// reject always. The broker depends on the standard library and packages
// id and event only, so that the core can use it without pulling in a
// front end.
//
// A request can be stored in its session's log (RequestedEvent,
// RepliedEvent: custom events approval_requested and approval_replied) and
// asked again from there by a process that reads the store: Ask keeps a
// request's id when it has one, and asks it once per broker.
//
// Guarantees:
//
//   - One answer per request: the first Reply wins and wakes the run; any
//     later Reply of that id gets ErrAnswered, an id the broker never
//     handed out (or one answered long ago) ErrUnknown.
//   - A request belongs to the session where the tool runs (a child's
//     session for a delegated agent, never its root's).
//   - "Always" answers become rules (agent and tool): while the broker
//     lives, a later request they match is answered by the rule at once,
//     without asking. Rules() lists them.
//   - With Options.Rules (a RuleStore, such as a project's Claude Code
//     settings: package approval/settingsrules), the store answers a
//     request first, and every "always" answer of a front end is saved to
//     it; what else waits and the store now covers is answered by it. The
//     store is called outside the broker's lock; a failed save is logged
//     and the answer stands.
//   - Nobody attached (no front end called Attach): the request is not
//     kept; it gets Options.Unattended (reject by default) with a message
//     that names the rule that asked and how to change it.
//   - Options.Timeout bounds the wait; at the timeout the request gets
//     Options.TimeoutReply (reject by default).
//   - The run's context ending (the run was cancelled) removes the pending
//     request; subscribers get a Cancelled notice.
//   - Subscribers get every notice of every request in the order the
//     broker made them (asked before replied or cancelled). They are
//     called one at a time, never under the broker's lock: a subscriber
//     may call Reply, Pending or Ask. A subscriber should return quickly:
//     the next notice waits for it.
package approval
