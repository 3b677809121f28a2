package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/hook"
)

// terminalApprover answers approval requests (tool_approval "ask") by
// asking on the terminal: allow once, always (for the rest of this run), or
// deny. One question at a time; the live view does not draw meanwhile.
type terminalApprover struct {
	mu     sync.Mutex  // one question at a time
	lock   sync.Locker // held while asking (the live view's), or nil
	lines  chan string // lines read from the terminal
	out    io.Writer
	always map[string]bool // tool names allowed for the rest of the run
}

func newTerminalApprover(in io.Reader, out io.Writer) *terminalApprover {
	a := &terminalApprover{lines: make(chan string), out: out, always: map[string]bool{}}
	// The reader goroutine lives as long as the process: a read from a
	// terminal cannot be interrupted, and the CLI exits after its run.
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			a.lines <- sc.Text()
		}
		close(a.lines)
	}()
	return a
}

func (a *terminalApprover) approve(ctx context.Context, req hook.ApprovalRequest, _ hook.Next[hook.ApprovalRequest, hook.ApprovalDecision]) hook.ApprovalDecision {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.always[req.ToolName] {
		return hook.ApprovalDecision{Outcome: hook.AllowedOnce, Reason: "allowed for this run on the terminal"}
	}
	if a.lock != nil {
		a.lock.Lock()
		defer a.lock.Unlock()
	}
	fmt.Fprintf(a.out, "\n? %s wants to run %s%s\n", req.Agent, req.ToolName, describeInput(req.Input))
	for {
		fmt.Fprint(a.out, "  allow [y]es once, [a]lways for this run, [n]o: ")
		var line string
		var ok bool
		select {
		case line, ok = <-a.lines:
		case <-ctx.Done():
			fmt.Fprintln(a.out)
			return hook.ApprovalDecision{Outcome: hook.Cancelled, Reason: "the run was cancelled"}
		}
		if !ok {
			fmt.Fprintln(a.out)
			return hook.ApprovalDecision{Outcome: hook.Rejected, Reason: "the terminal closed"}
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return hook.ApprovalDecision{Outcome: hook.AllowedOnce, Reason: "allowed on the terminal"}
		case "a", "always":
			a.always[req.ToolName] = true
			return hook.ApprovalDecision{Outcome: hook.AllowedOnce, Reason: "allowed for this run on the terminal"}
		case "n", "no":
			return hook.ApprovalDecision{Outcome: hook.Rejected, Reason: "denied on the terminal"}
		}
	}
}

// noTerminalApproval answers approval requests when no terminal is
// attached: denied, saying how to allow the tool.
func noTerminalApproval(_ context.Context, req hook.ApprovalRequest, _ hook.Next[hook.ApprovalRequest, hook.ApprovalDecision]) hook.ApprovalDecision {
	return hook.ApprovalDecision{Outcome: hook.Unavailable, Reason: fmt.Sprintf(
		"%s needs approval and no terminal is attached to ask; allow it with --allow %s, or with tool_approval: {%s: allow} on agent %s in the manifest",
		req.ToolName, req.ToolName, req.ToolName, req.Agent)}
}

// describeInput shows the part of a tool input a person decides on: the
// command, the file, the URL; else the JSON, cut.
func describeInput(raw json.RawMessage) string {
	var in map[string]any
	if json.Unmarshal(raw, &in) != nil {
		return ""
	}
	for _, k := range []string{"command", "file_path", "url", "path"} {
		if s, ok := in[k].(string); ok && s != "" {
			return ": " + cut(s, 200)
		}
	}
	if len(raw) == 0 || string(raw) == "{}" {
		return ""
	}
	return " " + cut(string(raw), 200)
}

func cut(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
