package cli

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
)

// `run --output jsonl` writes a delta while its part is still streaming:
// a reader of the lines sees the model's first words while the model has
// not sent the rest (the fake server holds it back until the test has
// read them). Before, deltas waited in the output buffer for the part's
// end or 64 KiB.
func TestRunJSONLStreamsDeltas(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var byGuard atomic.Bool
	guard := time.AfterFunc(45*time.Second, func() { byGuard.Store(true); close(release) })
	defer guard.Stop()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			f := "null"
			if finish != "" {
				f = fmt.Sprintf("%q", finish)
			}
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%q},\"finish_reason\":%s}]}\n\n", delta, f)
			w.(http.Flusher).Flush()
		}
		chunk("Hello", "")
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		chunk(" world", "stop")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	dir := t.TempDir()
	manifest := filepath.Join(dir, "pool.yaml")
	os.WriteFile(manifest, []byte(fmt.Sprintf("agents:\n  a:\n    model: {type: openai, model: m, base_url: %q, api_key: k}\n", srv.URL+"/v1")), 0o600)

	cmd := exec.Command(cliBinary(t), "run", "-c", manifest, "--db", ":memory:", "--output", "jsonl", "hi")
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var text strings.Builder
	released := false
	for sc.Scan() {
		e, err := event.Decode(sc.Bytes())
		if err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if d, ok := e.(event.PartDelta); ok {
			text.WriteString(d.Delta.ContentDelta)
			if !released {
				released = true
				if guard.Stop() {
					close(release) // the model may go on
				}
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if byGuard.Load() {
		t.Error("the first delta reached stdout only after the model sent the rest of its answer")
	}
	if text.String() != "Hello world" {
		t.Errorf("deltas %q", text.String())
	}
}
