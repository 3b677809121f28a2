package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/agentpool/agentpool/internal/bounded"
	"github.com/agentpool/agentpool/internal/proctree"
)

// maxOutput bounds what is kept of a hook's stdout and of its stderr.
const maxOutput = 1 << 20

// waitDelay bounds how long a finished (or killed) hook's output pipes are
// waited for when something it started still holds them.
const waitDelay = 2 * time.Second

// result is how one hook command ran.
type result struct {
	exitCode int // -1 when it did not exit normally
	stdout   string
	// stdoutCut: the hook wrote more than maxOutput bytes to stdout, and
	// stdout holds only the first of them.
	stdoutCut bool
	stderr    string
	duration  time.Duration
	timedOut  bool
	err       error // could not run, was cancelled, or timed out
}

// capped keeps the first maxOutput bytes written to it and drops the rest
// (cut says whether it dropped any). It holds its buffer in a field, not
// embedded: an embedded bytes.Buffer would promote ReadFrom, which io.Copy
// prefers to Write, and the cap would never apply.
type capped struct {
	buf bytes.Buffer
	cut bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := maxOutput - c.buf.Len()
	if room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	c.cut = c.cut || len(p) > room
	return len(p), nil
}

func (c *capped) String() string { return c.buf.String() }

// run runs one hook command with stdin (the payload and a newline) as its
// standard input and env added to its environment. stdin is shared by
// concurrent runs: read only.
func (b *Bridge) run(ctx context.Context, h handler, stdin []byte, env []string) result {
	tctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	var cmd *exec.Cmd
	if h.args != nil {
		// The exec form: the executable with its arguments, no shell. A
		// relative path is the project directory's (cmd.Dir).
		args := make([]string, len(h.args))
		for i, a := range h.args {
			args[i] = b.expand(a, h)
		}
		cmd = exec.CommandContext(tctx, b.expand(h.command, h), args...)
	} else {
		cmd = exec.CommandContext(tctx, b.opts.Shell, "-c", b.expand(h.command, h))
	}
	cmd.WaitDelay = waitDelay
	cmd.Dir = b.opts.ProjectDir
	cmd.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+b.opts.ProjectDir)
	if h.pluginRoot != "" {
		cmd.Env = append(cmd.Env, "CLAUDE_PLUGIN_ROOT="+h.pluginRoot)
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Env = append(cmd.Env, b.opts.Env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr capped
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The hook runs as a process tree: a timeout or an ended run (Cancel)
	// kills all of it, and so does the hook's exit (End), what left its
	// process group and session included. Made last: it adds to cmd.Env.
	tree := proctree.New(cmd)
	start := time.Now()
	err := tree.Start()
	if err == nil {
		err = tree.Wait()
	}
	if endErr := tree.End(); endErr != nil {
		b.log.Warn("hook: processes it started could not be killed", "command", h.command, "error", endErr)
	}
	r := result{exitCode: -1, duration: time.Since(start), stdout: stdout.String(), stdoutCut: stdout.cut, stderr: stderr.String()}
	if cmd.ProcessState != nil && cmd.ProcessState.Exited() {
		r.exitCode = cmd.ProcessState.ExitCode()
	}
	switch {
	case tctx.Err() != nil && ctx.Err() == nil:
		r.timedOut = true
		r.err = fmt.Errorf("timed out after %s; it was killed with every process it started", h.timeout)
	case ctx.Err() != nil:
		r.err = fmt.Errorf("cancelled: %w", context.Cause(ctx))
	case err != nil && errors.Is(err, exec.ErrWaitDelay) && r.exitCode >= 0:
		// It exited; something it left behind held its output open.
	case err != nil && r.exitCode < 0:
		r.err = err
	}
	return r
}

// expand substitutes ${CLAUDE_PROJECT_DIR} and, for a plugin's hook,
// ${CLAUDE_PLUGIN_ROOT} in a command or argument (the shell form also gets
// both in its environment).
func (b *Bridge) expand(s string, h handler) string {
	s = strings.ReplaceAll(s, "${CLAUDE_PROJECT_DIR}", b.opts.ProjectDir)
	if h.pluginRoot != "" {
		s = strings.ReplaceAll(s, "${CLAUDE_PLUGIN_ROOT}", h.pluginRoot)
	}
	return s
}

// output is the JSON a hook may print on stdout (exit code 0).
type output struct {
	Continue           *bool           `json:"continue"`
	StopReason         string          `json:"stopReason"`
	SystemMessage      string          `json:"systemMessage"`
	SuppressOutput     bool            `json:"suppressOutput"`
	Decision           string          `json:"decision"`
	Reason             string          `json:"reason"`
	HookSpecificOutput *specificOutput `json:"hookSpecificOutput"`
}

type specificOutput struct {
	HookEventName            string          `json:"hookEventName"`
	PermissionDecision       string          `json:"permissionDecision"`
	PermissionDecisionReason string          `json:"permissionDecisionReason"`
	UpdatedInput             json.RawMessage `json:"updatedInput"`
	AdditionalContext        string          `json:"additionalContext"`
	// Decision is PermissionRequest's answer.
	Decision *permissionAnswer `json:"decision"`
}

// permissionAnswer is the decision of a PermissionRequest hook.
type permissionAnswer struct {
	Behavior           string          `json:"behavior"` // allow or deny
	UpdatedInput       json.RawMessage `json:"updatedInput"`
	UpdatedPermissions json.RawMessage `json:"updatedPermissions"`
	Message            string          `json:"message"`
	Interrupt          bool            `json:"interrupt"`
}

// Verdicts of one hook run (and of the record's "decision").
const (
	vNone    = "none"
	vAllow   = "allow"
	vAsk     = "ask"
	vDeny    = "deny"
	vBlock   = "block"
	vStop    = "stop" // continue: false
	vError   = "error"
	vTimeout = "timeout"
)

// verdict is what one hook run asks for.
type verdict struct {
	decision      string
	reason        string
	context       string
	updatedInput  json.RawMessage
	stopReason    string // with decision vStop
	systemMessage string
	suppress      bool
	note          string // why an output was ignored, or the error
}

// interpret applies the exit code and output rules of docs/spec/HOOKS.md §4.
func interpret(event string, r result) verdict {
	switch {
	case r.timedOut:
		return verdict{decision: vTimeout, note: r.err.Error()}
	case r.err != nil:
		return verdict{decision: vError, note: r.err.Error()}
	case r.exitCode == 2:
		reason := strings.TrimSpace(r.stderr)
		if reason == "" {
			reason = fmt.Sprintf("blocked by a %s hook", event)
		}
		if event == PreToolUse || event == PermissionRequest {
			return verdict{decision: vDeny, reason: reason}
		}
		return verdict{decision: vBlock, reason: reason}
	case r.exitCode != 0:
		note := fmt.Sprintf("exit code %d", r.exitCode)
		if s := strings.TrimSpace(r.stderr); s != "" {
			note += ": " + truncate(s, 500)
		}
		return verdict{decision: vError, note: note}
	}
	if r.stdoutCut {
		// Cut output is no JSON the hook meant, nor all its text: none
		// of it applies.
		return verdict{decision: vError, note: fmt.Sprintf("output ignored: more than %d bytes on stdout (the bound of a hook's output)", maxOutput)}
	}
	out := strings.TrimSpace(r.stdout)
	if strings.HasPrefix(out, "{") {
		// Its size is capped (maxOutput); nesting and values are bounded
		// as configuration's are.
		if err := bounded.New(bounded.Config).CheckJSON([]byte(out)); err != nil {
			return verdict{decision: vError, note: fmt.Sprintf("output ignored: line %d: %v", err.(*bounded.Error).Line, err)}
		}
		if json.Valid([]byte(out)) {
			return parseOutput(event, []byte(out))
		}
	}
	v := verdict{decision: vNone}
	if out != "" && (event == SessionStart || event == UserPromptSubmit) {
		v.context = out
	}
	return v
}

func parseOutput(event string, data []byte) verdict {
	var o output
	if err := json.Unmarshal(data, &o); err != nil {
		return verdict{decision: vError, note: "invalid hook output: " + err.Error()}
	}
	v := verdict{decision: vNone, systemMessage: o.SystemMessage, suppress: o.SuppressOutput}
	var notes []string
	switch o.Decision {
	case "":
	case "block":
		v.decision, v.reason = vBlock, o.Reason
		if event == PreToolUse {
			v.decision = vDeny
		}
	case "approve":
		if event == PreToolUse {
			v.decision, v.reason = vAllow, o.Reason
		}
	default:
		notes = append(notes, fmt.Sprintf("unknown decision %q ignored", o.Decision))
	}
	if s := o.HookSpecificOutput; s != nil {
		if s.HookEventName != event {
			notes = append(notes, fmt.Sprintf("hookSpecificOutput for %q ignored in %s", s.HookEventName, event))
		} else {
			v.context = s.AdditionalContext
			if event == PreToolUse {
				switch s.PermissionDecision {
				case "":
				case vAllow, vAsk, vDeny:
					v.decision, v.reason = s.PermissionDecision, s.PermissionDecisionReason
				default:
					notes = append(notes, fmt.Sprintf("unknown permissionDecision %q ignored", s.PermissionDecision))
				}
				v.updatedInput, notes = objectInput(s.UpdatedInput, notes)
			}
			if event == PermissionRequest && s.Decision != nil {
				notes = v.permission(s.Decision, notes)
			}
		}
	}
	if o.Continue != nil && !*o.Continue {
		v.decision, v.stopReason = vStop, o.StopReason
		if v.stopReason == "" {
			v.stopReason = fmt.Sprintf("stopped by a %s hook", event)
		}
	}
	v.note = strings.Join(notes, "; ")
	return v
}

// permission applies a PermissionRequest hook's decision.
func (v *verdict) permission(d *permissionAnswer, notes []string) []string {
	switch d.Behavior {
	case vAllow:
		v.decision = vAllow
		v.updatedInput, notes = objectInput(d.UpdatedInput, notes)
	case vDeny:
		v.decision, v.reason = vDeny, d.Message
	default:
		notes = append(notes, fmt.Sprintf("unknown decision.behavior %q ignored", d.Behavior))
	}
	if len(d.UpdatedPermissions) > 0 && !isNull(d.UpdatedPermissions) {
		notes = append(notes, "updatedPermissions is not applied (agentpool's rules are the manifest's tool_approval)")
	}
	if d.Interrupt {
		notes = append(notes, "interrupt is not applied: the call is denied and the agent goes on")
	}
	return notes
}

// objectInput keeps an updatedInput that is a JSON object.
func objectInput(raw json.RawMessage, notes []string) (json.RawMessage, []string) {
	if len(raw) == 0 || isNull(raw) {
		return nil, notes
	}
	if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return nil, append(notes, "updatedInput is not an object; ignored")
	}
	return raw, notes
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}
