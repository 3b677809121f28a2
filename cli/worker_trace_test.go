package cli

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpool/agentpool/tracing/tracingtest"
)

// agentpool run and an agentpool worker, both exporting over OTLP: the
// run is one trace, rooted at run's StartWorkflow span, with the helper's
// session below the lead's and each chat span below its session.
func TestRunOnTemporalWorkerIsOneTrace(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes and dev server
	addr := devServer(t)
	rcv := &otlpReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	// In the environment of the two processes only (t.Setenv would keep
	// the test from running in parallel).
	otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_TRACES_EXPORTER=otlp", "OTEL_METRICS_EXPORTER=none"}
	dir := t.TempDir()
	remote := filepath.Join(dir, "remote.yaml")
	os.WriteFile(remote, []byte(temporalPool+fmt.Sprintf("execution: {engine: temporal, address: %q, task_queue: trace-test}\n", addr)), 0o644)
	db := filepath.Join(dir, "pool.db")

	w := exec.Command(cliBinary(t), "worker", "-c", remote, "--db", db)
	w.Env = append(append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir()), otel...)
	w.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var werr strings.Builder
	w.Stderr = &werr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	wdone := make(chan error, 1)
	go func() { wdone <- w.Wait() }()
	stopWorker := func() {
		_ = w.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-wdone:
			if err != nil {
				t.Errorf("worker after SIGTERM: %v\n%s", err, werr.String())
			}
		case <-time.After(40 * time.Second):
			_ = w.Process.Kill()
			<-wdone
			t.Error("worker did not stop on SIGTERM")
		}
	}
	got := runCLIEnv(t, dir, otel, "run", "-c", remote, "--db", db, "--output", "jsonl", "go")
	stopWorker() // flushes the worker's spans
	if got.code != 0 {
		t.Fatalf("run on temporal: exit %d\n%s\nworker: %s", got.code, got.stderr, werr.String())
	}

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	spans := tracingtest.FromOTLP(rcv.traces...)
	byID := map[string]*tracingtest.Span{}
	byName := map[string]*tracingtest.Span{}
	var roots []string
	for _, s := range spans {
		byID[s.ID()] = s
		byName[s.Name()] = s
		if s.Root() {
			roots = append(roots, s.Name())
		}
	}
	if len(roots) != 1 || roots[0] != "StartWorkflow:agentpool.Session" {
		t.Fatalf("roots %v, want run's StartWorkflow span only", roots)
	}
	trace := byName["StartWorkflow:agentpool.Session"].TraceID()
	for _, s := range spans {
		if s.TraceID() != trace {
			t.Errorf("span %q in trace %s, not %s", s.Name(), s.TraceID(), trace)
		}
	}
	below := func(s *tracingtest.Span, anc string) bool {
		a := byName[anc]
		if s == nil || a == nil {
			return false
		}
		for p := s.ParentID(); p != ""; p = byID[p].ParentID() {
			if p == a.ID() {
				return true
			}
			if byID[p] == nil {
				return false
			}
		}
		return false
	}
	for _, s := range spans {
		t.Logf("span %q (%s) under %s", s.Name(), s.ID(), s.ParentID())
	}
	for _, c := range [][2]string{
		{"invoke_agent lead", "StartWorkflow:agentpool.Session"},
		{"invoke_agent helper", "invoke_agent lead"},
	} {
		if !below(byName[c[0]], c[1]) {
			t.Errorf("%q is not below %q", c[0], c[1])
		}
	}
	// The scripted models are all "test": the lead's two turns and the
	// helper's one, each below its own session.
	chats := map[string]int{}
	for _, s := range spans {
		if s.Name() != "chat test" {
			continue
		}
		switch {
		case below(s, "invoke_agent helper"):
			chats["helper"]++
		case below(s, "invoke_agent lead"):
			chats["lead"]++
		}
	}
	if chats["lead"] != 2 || chats["helper"] != 1 {
		t.Errorf("chat spans below the lead's session %d (want 2), below the helper's %d (want 1)", chats["lead"], chats["helper"])
	}
}
