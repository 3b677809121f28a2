package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/model/human"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// terminalHuman is the terminal as the person of input models (AgentPool's
// `model: input`): each turn is a question on stderr, like an approval
// (the live view held meanwhile, one question at a time), and the line
// the person types is the agent's answer.
type terminalHuman struct {
	lines   func() <-chan string // what the person types, shared with the approvals
	printer *approvalPrinter
	store   session.Store // names the agent by its path in the session tree
}

// AskHuman puts q on the terminal and waits for one line.
func (h *terminalHuman) AskHuman(ctx context.Context, q human.Question) (string, error) {
	release := h.printer.hold()
	defer release()
	who := "an agent"
	if inv := spawn.InvocationFrom(ctx); inv != nil {
		who = agentPath(ctx, h.store, inv.Session.ID, inv.Session.AgentName)
	}
	w := h.printer.w
	fmt.Fprintf(w, "\n? you answer as %s\n", who)
	if s := strings.TrimSpace(q.System); s != "" {
		fmt.Fprint(w, indentLines("system: "+s, "    "))
	}
	fmt.Fprint(w, indentLines(q.Prompt, "  "))
	fmt.Fprint(w, "  "+q.InputPrompt)
	select {
	case line, open := <-h.lines():
		if !open {
			fmt.Fprintln(w)
			return "", errors.New("the terminal closed before an answer")
		}
		return line, nil
	case <-ctx.Done():
		fmt.Fprintln(w, "\n  (the run was cancelled)")
		return "", ctx.Err()
	}
}

// indentLines indents every line of s, ending with a newline.
func indentLines(s, indent string) string {
	s = strings.TrimRight(s, "\n")
	return indent + strings.ReplaceAll(s, "\n", "\n"+indent) + "\n"
}
