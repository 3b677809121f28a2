package command_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/hook/command"
	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
	"github.com/agentpool/agentpool/model"
)

// A hook that prints far more than the cap is kept to 1 MiB: its stderr
// (with exit 2, the reason the model reads) is cut before it is recorded
// or sent, however the output arrives.
func TestHookOutputIsCapped(t *testing.T) {
	tl := &probe{}
	p := newProject(t, probeManifest, settingsFor("PreToolUse", "", "sh ${CLAUDE_PROJECT_DIR}/hooks/loud.sh", 30),
		map[string]string{"loud.sh": `head -c 8388608 /dev/zero | tr '\0' o
head -c 8388608 /dev/zero | tr '\0' e >&2
exit 2`}, tl)
	res := p.run("go")
	runs := p.hookRuns(res.SessionID)
	if len(runs) != 1 {
		t.Fatalf("hook runs %v", runs)
	}
	reason, _ := runs[0]["reason"].(string)
	if len(reason) == 0 || len(reason) > 1<<20 {
		t.Errorf("the recorded reason has %d bytes, want at most the 1 MiB cap", len(reason))
	}
	for _, m := range p.messages(res.SessionID) {
		for _, part := range m.Parts {
			if n := len(part.Text); n > 1<<20+1024 {
				t.Errorf("a stored message part holds %d bytes of hook output", n)
			}
		}
	}
	if len(tl.ran()) != 0 {
		t.Error("the denied tool ran")
	}
}

// What a hook leaves running in the background is killed when the hook
// exits, not only on a timeout.
func TestHookBackgroundChildKilledAtExit(t *testing.T) {
	tl := &probe{}
	p := newProject(t, probeManifest, settingsFor("PreToolUse", "", "sh ${CLAUDE_PROJECT_DIR}/hooks/bg.sh", 30),
		map[string]string{"bg.sh": `sleep 300 >/dev/null 2>&1 &
echo $! > "$CLAUDE_PROJECT_DIR/bg.pid"
exit 0`}, tl)
	p.run("go")
	raw, err := os.ReadFile(filepath.Join(p.dir, "bg.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	if !proctreetest.WaitExit(pid, 5*time.Second) { // its pidfd tells
		t.Fatalf("the hook's background child %d outlived the hook", pid)
	}
}

// A settings file over 1 MiB is refused before it is read (a 200 MiB one
// took 4.4 s and 457 MB), naming the file and the bound; a named pipe is
// refused at once instead of waiting for a writer.
func TestHugeSettingsFile(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 200<<20); err != nil { // sparse: no disk spent
		t.Fatal(err)
	}
	_, err := command.LoadSettings(huge)
	if want := huge + ": file is 209715200 bytes, more than the limit of 1048576 bytes per file"; err == nil || err.Error() != want {
		t.Errorf("huge settings file: %v\nwant %s", err, want)
	}
	fifo := filepath.Join(dir, "pipe.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes:", err)
	}
	if _, err := command.LoadSettings(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe)") {
		t.Errorf("named pipe: %v", err)
	}
}

// Settings JSON is bounded in nesting before it is decoded; the error
// names the file, the line and the bound.
func TestSettingsJSONDepth(t *testing.T) {
	deep := "{\"hooks\": {\"Stop\": [{\"hooks\": [\n{\"type\": \"command\", \"command\": \"x\", \"extra\": " +
		strings.Repeat("[", 200) + strings.Repeat("]", 200) + "}]}]}}"
	_, err := command.ParseSettings("s.json", []byte(deep))
	if want := "s.json:2: JSON nested too deeply (more than 100 levels)"; err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// A hook that prints more than the 1 MiB its stdout is kept to: what was
// kept is cut, so none of it applies (it was injected as 1 MiB of prompt
// context), and the run is recorded as an error that names the bound.
func TestHugeHookOutput(t *testing.T) {
	p := newProject(t, probeManifest, settingsFor("UserPromptSubmit", "", "sh ${CLAUDE_PROJECT_DIR}/hooks/loud.sh", 30),
		map[string]string{"loud.sh": `head -c 8388608 /dev/zero | tr '\0' o`}, &probe{})
	var mu sync.Mutex
	var firstRequest string
	p.reg.OnRequest.Use(func(ctx context.Context, r hook.ModelRequest, next hook.Next[hook.ModelRequest, *model.Request]) *model.Request {
		mu.Lock()
		if firstRequest == "" {
			for _, m := range r.Request.Messages {
				firstRequest += m.Text() + "\n"
			}
		}
		mu.Unlock()
		return next(ctx, r)
	})
	res := p.run("hello")
	mu.Lock()
	if !strings.Contains(firstRequest, "hello") || strings.Contains(firstRequest, "oooo") {
		t.Errorf("first request (%d bytes) should hold the prompt and none of the hook's output", len(firstRequest))
	}
	mu.Unlock()
	runs := p.hookRuns(res.SessionID)
	if len(runs) != 1 {
		t.Fatalf("hook runs %v", runs)
	}
	msg, _ := runs[0]["error"].(string)
	if runs[0]["decision"] != "error" || !strings.Contains(msg, "output ignored: more than 1048576 bytes on stdout") {
		t.Errorf("hook run decision %v, error %q", runs[0]["decision"], msg)
	}
}
