package command_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the hook's background child %d outlived the hook", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
