// The manifest's `approvals:` block: how long a tool call waits for a
// person's answer, and the answer when nobody can be asked.

package config

import "time"

// Answers of `approvals.unattended`.
const (
	UnattendedDeny  = "deny"  // the default: refuse, telling the model how to allow the tool
	UnattendedAllow = "allow" // run the tool without asking
)

var approvalsKeys = []string{"timeout", "unattended"}

// Approvals is `approvals:`. The zero value waits without a time limit and
// denies when nobody can be asked.
type Approvals struct {
	// Timeout bounds the wait for an answer (0: none); at the timeout the
	// tool call is denied.
	Timeout time.Duration
	// Unattended is UnattendedAllow or UnattendedDeny (also when empty):
	// the answer when no front end is there to ask a person.
	Unattended string
	Line       int // of the block, for later errors
}

// approvals reads `approvals:`.
func (p *parser) approvals(e entry) Approvals {
	a := Approvals{Line: e.line()}
	f, ok := p.object(e.val, "approvals", approvalsKeys)
	if !ok {
		return a
	}
	if v, ok := f["timeout"]; ok {
		a.Timeout = p.duration(v.val, "approvals.timeout")
	}
	if v, ok := f["unattended"]; ok {
		a.Unattended, _ = p.word(v.val, "approvals.unattended")
		switch a.Unattended {
		case UnattendedAllow, UnattendedDeny, "":
		default:
			p.add(v.line(), "approvals.unattended", "unknown answer %q (allow or deny)", a.Unattended)
			a.Unattended = ""
		}
	}
	return a
}
