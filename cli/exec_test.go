package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/internal/binaries"
)

// TestTemporalNotInMainBinary: the light binary links neither the Temporal
// SDK, gRPC, nor the OpenTelemetry SDK and exporters (nor the packages of
// this module that wrap them); agentpool-full links them. This is what
// makes agentpool start in a few milliseconds (BENCHMARKS.md, Start-up).
func TestTemporalNotInMainBinary(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	forbidden := []string{
		"go.temporal.io/",
		"google.golang.org/grpc",
		"google.golang.org/protobuf",
		"github.com/prometheus/",
		"go.opentelemetry.io/otel/sdk",
		"go.opentelemetry.io/otel/exporters/",
		"go.opentelemetry.io/contrib/",
		"github.com/agentpool/agentpool/durable",
		"github.com/agentpool/agentpool/tracing/otelwire",
		"github.com/agentpool/agentpool/cli/temporalcli",
		"github.com/jackc/",
		"github.com/agentpool/agentpool/session/postgres",
	}
	has := func(list []string, prefix string) bool {
		for _, p := range list {
			if p == prefix || strings.HasPrefix(p, prefix) {
				return true
			}
		}
		return false
	}
	light := deps("github.com/agentpool/agentpool/cmd/agentpool-light")
	for _, f := range forbidden {
		for _, p := range light {
			if strings.HasPrefix(p, f) {
				t.Errorf("cmd/agentpool-light depends on %s", p)
			}
		}
	}
	// The check would see them: the full binary has them.
	full := deps("github.com/agentpool/agentpool/cmd/agentpool-full")
	for _, want := range []string{"go.temporal.io/sdk/worker", "google.golang.org/grpc", "go.opentelemetry.io/otel/sdk/trace",
		"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp", "github.com/agentpool/agentpool/cli/temporalcli",
		"github.com/agentpool/agentpool/session/postgres"} {
		if !has(full, want) {
			t.Errorf("cmd/agentpool-full does not depend on %s", want)
		}
	}
}

// TestExecRule: the light binary needs agentpool-full exactly for worker,
// a temporal manifest in a command that builds a pool, telemetry export
// asked for by the environment or the manifest, and a PostgreSQL session
// database in a command that opens the store; the full binary never.
func TestExecRule(t *testing.T) {
	inProcess := &config.Manifest{}
	temporal := &config.Manifest{Execution: config.Execution{Engine: config.EngineTemporal}}
	otlpManifest := &config.Manifest{Observability: config.Observability{Enabled: true, Provider: "custom", Endpoint: "http://127.0.0.1:4318"}}
	hosted := &config.Manifest{Observability: config.Observability{Enabled: true, Provider: "logfire", Endpoint: "https://x"}}
	disabled := &config.Manifest{Observability: config.Observability{Enabled: false, Provider: "custom", Endpoint: "http://127.0.0.1:4318"}}
	pgManifest := &config.Manifest{Storage: config.Storage{URL: "postgresql://u@127.0.0.1/db"}}
	full := fullTestExtensions()
	cases := []struct {
		name  string
		needs string
		db    string
		m     *config.Manifest
		env   map[string]string
		want  bool // light needs full
	}{
		{"version", "", "", nil, nil, false},
		{"run, --db postgres", needsManifest, "postgres://u@127.0.0.1/db", inProcess, nil, true},
		{"run, --db file over a postgres manifest", needsManifest, "/tmp/x.db", pgManifest, nil, false},
		{"serve, manifest storage.url postgres", needsManifest, "", pgManifest, nil, true},
		{"sessions list, --db POSTGRESQL", needsStore, "POSTGRESQL://u@h/db", nil, nil, true},
		{"sessions list, manifest postgres", needsStore, "", pgManifest, nil, true},
		{"sessions list, sqlite", needsStore, "/tmp/x.db", nil, nil, false},
		{"sessions list, memory", needsStore, ":memory:", nil, nil, false},
		{"replay, --db postgres", "in-process", "postgres://h/db", nil, nil, true},
		{"version, postgres manifest", "", "", pgManifest, nil, false},
		{"validate with OTLP env", "", "", nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false},
		{"run in process", needsManifest, "", inProcess, nil, false},
		{"run, manifest not loadable", needsManifest, "", nil, map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, false},
		{"worker", needsTemporal, "", inProcess, nil, true},
		{"worker, manifest not loadable", needsTemporal, "", nil, nil, true},
		{"run temporal", needsManifest, "", temporal, nil, true},
		{"run, OTLP endpoint", needsManifest, "", inProcess, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"run, traces endpoint", needsManifest, "", inProcess, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"run, metrics endpoint", needsManifest, "", inProcess, map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"run, console traces", needsManifest, "", inProcess, map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{"run, prometheus metrics", needsManifest, "", inProcess, map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"}, true},
		{"run, exporters none", needsManifest, "", inProcess, map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, false},
		{"run, endpoint but exporters none", needsManifest, "", inProcess, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, false},
		{"run, blank exporter", needsManifest, "", inProcess, map[string]string{"OTEL_TRACES_EXPORTER": " "}, false},
		{"run, SDK disabled", needsManifest, "", inProcess, map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, false},
		{"run, manifest OTLP", needsManifest, "", otlpManifest, nil, true},
		{"run, manifest OTLP, exporters none", needsManifest, "", otlpManifest, map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, false},
		{"run, manifest hosted provider", needsManifest, "", hosted, nil, false},
		{"run, manifest block disabled", needsManifest, "", disabled, nil, false},
		{"run, unrelated OTEL_ variable", needsManifest, "", inProcess, map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_RESOURCE_ATTRIBUTES": "a=b"}, false},
	}
	for _, c := range cases {
		lookup := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
		if got := needsFull(Extensions{}, c.needs, c.db, c.m, lookup) != ""; got != c.want {
			t.Errorf("%s: light needs full = %v, want %v", c.name, got, c.want)
		}
		if r := needsFull(full, c.needs, c.db, c.m, lookup); r != "" {
			t.Errorf("%s: the full binary needs full: %s", c.name, r)
		}
	}
}

// lightCLI runs this test binary as the light agentpool with the real
// search for agentpool-full (lookupEnv), PATH set to path, in dir.
func lightCLI(t *testing.T, exe, dir, path string, extraEnv []string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	env := withEnv(os.Environ(), lookupEnv, "real")
	env = withEnv(env, "PATH", path)
	env = withEnv(env, "XDG_DATA_HOME", t.TempDir())
	env = withEnv(env, "HOME", t.TempDir())
	for _, kv := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		env = withEnv(env, kv, "")
	}
	cmd.Env = append(env, extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliResult{out.String(), errb.String(), code}
}

// TestFullBinaryMissing: without agentpool-full, a command that needs it
// fails at once, before it opens anything, with an error that says what
// it needs and how to build or install it; commands that do not need it
// run.
func TestFullBinaryMissing(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := t.TempDir()
	exe := cliBinary(t) // in go test's build directory: no agentpool-full beside it
	emptyPath := t.TempDir()
	temporal := filepath.Join(dir, "temporal.yaml")
	os.WriteFile(temporal, []byte("execution: {engine: temporal, address: 127.0.0.1:1}\nagents:\n  a:\n    model: {type: test}\n"), 0o644)
	plain := filepath.Join(dir, "plain.yaml")
	os.WriteFile(plain, []byte("agents:\n  a:\n    model: {type: scripted, turns: [\"hi\"]}\n"), 0o644)
	db := filepath.Join(dir, "s.db")
	for _, c := range []struct {
		name   string
		env    []string
		args   []string
		reason string
	}{
		{"worker", nil, []string{"worker", "-c", plain, "--db", db}, "agentpool worker runs the Temporal engine"},
		{"run temporal", nil, []string{"run", "-c", temporal, "--db", db, "hi"}, "the manifest's execution engine is temporal"},
		{"serve temporal", nil, []string{"serve", "opencode", "-c", temporal, "--db", db, "--addr", "127.0.0.1:0"}, "the manifest's execution engine is temporal"},
		{"run traced", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1"}, []string{"run", "-c", plain, "--db", db, "hi"}, "telemetry export is asked for"},
	} {
		r := lightCLI(t, exe, dir, emptyPath, c.env, c.args...)
		if r.code != 1 || !strings.Contains(r.stderr, c.reason) || !strings.Contains(r.stderr, "needs agentpool-full") ||
			!strings.Contains(r.stderr, "make build") || !strings.Contains(r.stderr, "go install github.com/agentpool/agentpool/cmd/agentpool-full@latest") ||
			!strings.Contains(r.stderr, "go run ./cmd/agentpool-full") {
			t.Errorf("%s: exit %d, stderr:\n%s", c.name, r.code, r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("%s: stdout %q", c.name, r.stdout)
		}
		if _, err := os.Stat(db); err == nil {
			t.Errorf("%s: the store was opened before the check", c.name)
		}
	}
	// What the light binary has runs without it.
	if r := lightCLI(t, exe, dir, emptyPath, nil, "run", "-c", plain, "--db", db, "hi"); r.code != 0 || strings.TrimSpace(r.stdout) != "hi" {
		t.Errorf("run in process: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if r := lightCLI(t, exe, dir, emptyPath, nil, "validate", temporal); r.code != 0 {
		t.Errorf("validate a temporal manifest: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	// A binary called agentpool-full that is not the full one (it would
	// exec itself for ever) is an error.
	if r := lightCLI(t, exe, dir, emptyPath, []string{binaries.EnvFromLight + "=1", lookupEnv + "="}, "worker", "-c", plain); r.code != 1 || !strings.Contains(r.stderr, "is not the full binary") {
		t.Errorf("exec loop: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// TestFullBinaryFound: the light binary runs the agentpool-full next to
// it, else the one on PATH, in its place, with the same arguments.
func TestFullBinaryFound(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	exe := cliBinary(t)
	plain := filepath.Join(t.TempDir(), "plain.yaml")
	os.WriteFile(plain, []byte("agents:\n  a:\n    model: {type: scripted, turns: [\"hi\"]}\n"), 0o644)
	// The full binary's worker, on an in-process manifest, says so; the
	// light one would have failed to find agentpool-full.
	const fullSays = "a worker runs pools with execution: {engine: temporal}"
	link := func(dir, name string) string {
		p := filepath.Join(dir, name)
		if err := os.Link(exe, p); err != nil {
			if err := os.Symlink(exe, p); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}

	next := t.TempDir()
	light := filepath.Join(next, "agentpool")
	if err := os.Link(exe, light); err != nil {
		t.Skipf("cannot link the test binary: %v", err)
	}
	link(next, binaries.Full)
	if r := lightCLI(t, light, next, t.TempDir(), nil, "worker", "-c", plain, "--db", ":memory:"); r.code != 1 || !strings.Contains(r.stderr, fullSays) {
		t.Errorf("agentpool-full next to agentpool: exit %d, stderr:\n%s", r.code, r.stderr)
	}

	onPath := t.TempDir()
	link(onPath, binaries.Full)
	if r := lightCLI(t, exe, t.TempDir(), onPath, nil, "worker", "-c", plain, "--db", ":memory:"); r.code != 1 || !strings.Contains(r.stderr, fullSays) {
		t.Errorf("agentpool-full on PATH: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
