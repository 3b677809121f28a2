package cli

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
)

// cliEnv, set in the environment of a process started from this test
// binary, makes that process the agentpool command (TestMain runs Main):
// the tests drive the CLI without building it, with the race detector and
// the code under test, and the binary is built once by go test. With
// cliEnv=1 the process is the light agentpool, whose agentpool-full is
// this test binary again with cliEnv=full (testExtensions): a test that
// runs a worker or a temporal pool goes through the exec to the full
// binary, as with the real ones.
const cliEnv = "AGENTPOOL_TEST_BINARY_IS_CLI"

func TestMain(m *testing.M) {
	switch os.Getenv(cliEnv) {
	case "1":
		faultyStoreFromEnv()
		os.Exit(Main(lightTestExtensions()))
	case "full":
		faultyStoreFromEnv()
		os.Exit(Main(fullTestExtensions()))
	}
	// Every command a test starts inherits it (os.Environ()).
	os.Setenv(cliEnv, "1")
	// Under -race each CLI process would sleep 1 s before it exits
	// (GORACE's atexit_sleep_ms); the tests start well over a hundred.
	// Races are still reported: the sleep only waits for late goroutines.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}

// cliBinary returns the agentpool command to run: this test binary, which
// is the CLI in processes started with cliEnv (see TestMain).
func cliBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("the test binary: %v", err)
	}
	return exe
}

type cliResult struct {
	stdout, stderr string
	code           int
}

func runCLI(t *testing.T, dir string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(cliBinary(t), args...)
	cmd.Dir = dir
	// Keep the user's data directory out of tests.
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
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

// decodeJSONL decodes every stdout line as an event.
func decodeJSONL(t *testing.T, s string) []event.Event {
	t.Helper()
	var evs []event.Event
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		e, err := event.Decode(sc.Bytes())
		if err != nil {
			t.Fatalf("line %d is not an event: %v\n%s", n, err, sc.Text())
		}
		evs = append(evs, e)
	}
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	return evs
}

func offline(m *config.Manifest) bool {
	for _, a := range m.Agents {
		if a.Model.Type != config.ModelTest && a.Model.Type != config.ModelScripted {
			return false
		}
	}
	return true
}

func TestRunJSONLDefaultAndExamples(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	cases := map[string][]string{"built-in default": {"run", "--output", "jsonl", "--db", ":memory:", "hello"}}
	files, _ := filepath.Glob("../examples/*.yaml")
	more, _ := filepath.Glob("../examples/*/agentpool.yaml")
	for _, f := range append(files, more...) {
		m, err := config.Load(f)
		if err != nil {
			t.Errorf("example %s does not load: %v", f, err)
			continue
		}
		if !offline(m) {
			continue // needs a provider; covered by the provider tests
		}
		cases[f] = []string{"run", "-c", f, "--output", "jsonl", "--db", ":memory:", "hello"}
	}
	if len(cases) < 3 {
		t.Fatalf("expected the default and at least two examples, got %d", len(cases))
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for i, a := range args {
				if strings.HasPrefix(a, "../") {
					args[i], _ = filepath.Abs(a)
				}
			}
			r := runCLI(t, dir, args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			evs := decodeJSONL(t, r.stdout)
			if evs[0].Kind() != event.KindRunStarted {
				t.Errorf("first event is %s", evs[0].Kind())
			}
			if last := evs[len(evs)-1]; last.Kind() != event.KindStreamComplete {
				t.Errorf("last event is %s", last.Kind())
			}
			var starts, ends int
			for _, e := range evs {
				_, inner := event.Unwrap("", e)
				switch inner.(type) {
				case event.SpawnSessionStart:
					starts++
				case event.SpawnSessionEnd:
					ends++
				}
			}
			if starts == 0 || starts != ends {
				t.Errorf("spawn starts %d, ends %d", starts, ends)
			}
		})
	}
}

func TestRunTextPrintsFinalAnswer(t *testing.T) {
	r := runCLI(t, t.TempDir(), "run", "--db", ":memory:", "hello")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "research team found") {
		t.Fatalf("stdout lacks the final answer: %q", r.stdout)
	}
}

func TestRunUsesLocalManifest(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte("agents:\n  solo:\n    model: {type: test, custom_output_text: local manifest}\n"), 0o644)
	r := runCLI(t, dir, "run", "--db", ":memory:", "hi")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "local manifest" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestBrokenManifest(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "agentpool.yaml")
	os.WriteFile(bad, []byte("agents:\n  writer:\n    model: tset\n"), 0o644)
	for _, args := range [][]string{{"validate", bad}, {"run", "-c", bad, "hi"}} {
		r := runCLI(t, dir, args...)
		if r.code == 0 {
			t.Fatalf("%v: exit 0", args)
		}
		want := bad + `:3: agents.writer.model: unknown model type "tset"`
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("%v: stderr %q lacks %q", args, r.stderr, want)
		}
		if r.stdout != "" {
			t.Fatalf("%v: stdout not empty: %q", args, r.stdout)
		}
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	r := runCLI(t, dir, "run", "--output", "xml", "hi")
	if r.code == 0 || !strings.Contains(r.stderr, "--output must be text or jsonl") {
		t.Fatalf("bad --output: %d %q", r.code, r.stderr)
	}
	r = runCLI(t, dir, "run", "--db", ":memory:", "--agent", "nobody", "hi")
	if r.code == 0 || !strings.Contains(r.stderr, `agent "nobody" is not in the built-in demo`) {
		t.Fatalf("unknown agent: %d %q", r.code, r.stderr)
	}
	if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 {
		t.Fatalf("error is not one line: %q", r.stderr)
	}
	failing := filepath.Join(dir, "fail.yaml")
	os.WriteFile(failing, []byte("agents:\n  a:\n    model: {type: scripted, turns: [{error: provider exploded}]}\n"), 0o644)
	r = runCLI(t, dir, "run", "-c", failing, "--db", ":memory:", "hi")
	if r.code != 1 || !strings.Contains(r.stderr, "provider exploded") {
		t.Fatalf("failing model: %d %q", r.code, r.stderr)
	}
}

func TestValidateAndVersion(t *testing.T) {
	ex, _ := filepath.Abs("../examples/agentpool-style.yaml")
	r := runCLI(t, t.TempDir(), "validate", ex)
	if r.code != 0 || !strings.Contains(r.stdout, "ok") {
		t.Fatalf("validate: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, t.TempDir(), "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "agentpool ") || !strings.Contains(r.stdout, "\ncommit:    ") ||
		!strings.Contains(r.stdout, "\ngo:        go1.") {
		t.Fatalf("version (with its commit and Go release): %d %q", r.code, r.stdout)
	}
}

// TestRunResponseCap: a model's max_response_bytes bounds one response;
// the run ends with an error that says so.
func TestRunResponseCap(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(`agents:
  a:
    model: {type: scripted, max_response_bytes: 1000, turns: ["`+strings.Repeat("chatter ", 250)+`"]}
`), 0o644)
	r := runCLI(t, dir, "run", "--db", ":memory:", "go")
	if r.code != 1 || !strings.Contains(r.stderr, "larger than 1000 bytes") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}
