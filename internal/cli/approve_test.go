package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/hook"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestTerminalApprover(t *testing.T) {
	in, feed := io.Pipe()
	out := &syncBuffer{}
	a := newTerminalApprover(in, out)
	ask := func(tool string, input string) hook.ApprovalDecision {
		return a.approve(context.Background(), hook.ApprovalRequest{Agent: "dev", ToolName: tool, Input: json.RawMessage(input)}, nil)
	}
	answer := func(lines ...string) {
		go func() {
			for _, l := range lines {
				io.WriteString(feed, l+"\n")
			}
		}()
	}

	answer("maybe", "y")
	if d := ask("Bash", `{"command":"make test"}`); d.Outcome != hook.AllowedOnce {
		t.Errorf("y: %+v", d)
	}
	if s := out.String(); !strings.Contains(s, "? dev wants to run Bash: make test") || strings.Count(s, "allow [y]es once") != 2 {
		t.Errorf("prompt text %q (an unknown answer asks again)", s)
	}
	answer("n")
	if d := ask("Write", `{"file_path":"a.txt","content":"x"}`); d.Outcome != hook.Rejected {
		t.Errorf("n: %+v", d)
	}
	answer("always")
	if d := ask("Edit", `{}`); d.Outcome != hook.AllowedOnce {
		t.Errorf("always: %+v", d)
	}
	before := out.String()
	if d := ask("Edit", `{}`); d.Outcome != hook.AllowedOnce || out.String() != before {
		t.Errorf("always should not ask again: %+v", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d := a.approve(ctx, hook.ApprovalRequest{ToolName: "Bash"}, nil); d.Outcome != hook.Cancelled {
		t.Errorf("cancelled run: %+v", d)
	}
	feed.Close()
	if d := ask("Bash", `{}`); d.Outcome != hook.Rejected {
		t.Errorf("closed terminal: %+v", d)
	}
}
