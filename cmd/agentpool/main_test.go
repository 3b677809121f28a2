package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
	"go.uber.org/goleak"
	"golang.org/x/term"

	"github.com/agentpool/agentpool/cli"
	"github.com/agentpool/agentpool/internal/binaries"
)

var update = flag.Bool("update", false, "rewrite help.txt from the command line's help")

// The tests run this test binary as every program, by the name it is
// started under: a link named agentpool is the front (main), a link named
// agentpool-light or agentpool-full is a stand-in command line whose
// behaviour siblingEnv chooses (sibling). So the front under test is the
// code of this package, and whatever it execs is known.
const siblingEnv = "AGENTPOOL_FRONT_TEST_SIBLING"

func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case binaries.Front:
		main()
	case binaries.Light, binaries.Full:
		os.Exit(sibling(os.Getenv(siblingEnv)))
	}
	goleak.VerifyTestMain(m)
}

// report is what the "report" sibling prints: what it was started with.
type report struct {
	Name      string   // file name it was started as (argv[0])
	Args      []string // os.Args[1:]
	Pid       int
	FromFront string // binaries.EnvFromFront
	Probe     string // probeEnv
	Stdin     string // stdin, read to its end when it is not a terminal
	StdinTTY  bool
	StdoutTTY bool
}

const (
	probeEnv = "AGENTPOOL_FRONT_TEST_PROBE"
	exitEnv  = "AGENTPOOL_FRONT_TEST_EXIT" // the "report" sibling's exit status
)

// sibling is the stand-in command line:
//   - "cli": the real one (cli, as cmd/agentpool-light);
//   - "report": prints a report as JSON and exits with exitEnv's status;
//   - "signal": prints "ready PID", then exits 128+N on signal N (SIGINT,
//     SIGTERM);
//   - "front": the front again (a mis-installed agentpool-light).
func sibling(role string) int {
	switch role {
	case "cli":
		return cli.Main(cli.Extensions{})
	case "report":
		r := report{Name: filepath.Base(os.Args[0]), Args: os.Args[1:], Pid: os.Getpid(),
			FromFront: os.Getenv(binaries.EnvFromFront), Probe: os.Getenv(probeEnv),
			StdinTTY: term.IsTerminal(0), StdoutTTY: term.IsTerminal(1)}
		if !r.StdinTTY {
			b, _ := io.ReadAll(os.Stdin)
			r.Stdin = string(b)
		}
		if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
			return 99
		}
		code, _ := strconv.Atoi(os.Getenv(exitEnv))
		return code
	case "signal":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
		fmt.Printf("ready %d\n", os.Getpid())
		return 128 + int((<-c).(syscall.Signal))
	case "front":
		return front(os.Args[1:], os.Stdout, os.Stderr, syscall.Exec)
	}
	fmt.Fprintf(os.Stderr, "%s=%q: no such role\n", siblingEnv, role)
	return 98
}

// install puts this test binary into a new directory under each of names.
func install(t *testing.T, names ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range names {
		dst := filepath.Join(dir, name)
		if os.Link(exe, dst) == nil {
			continue
		}
		data, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs the program at path with args, PATH set to pathDir (unless
// ""), role as the sibling's role, env added, stdin from stdin.
func run(t *testing.T, path, pathDir, role string, env []string, stdin io.Reader, args ...string) result {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), siblingEnv+"="+role, "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
	if pathDir != "" {
		cmd.Env = append(cmd.Env, "PATH="+pathDir)
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

func decodeReport(t *testing.T, r result) report {
	t.Helper()
	var rep report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("not a report (exit %d): %v\nstdout: %s\nstderr: %s", r.code, err, r.stdout, r.stderr)
	}
	return rep
}

// TestFrontAnswersLikeTheCommandLine: what the front answers itself
// (version, the top-level help) is byte for byte what the command line
// answers, stdout, stderr and exit status, and it answers without any
// command line installed.
func TestFrontAnswersLikeTheCommandLine(t *testing.T) {
	cliDir := install(t, binaries.Light)
	real := filepath.Join(cliDir, binaries.Light)
	if *update {
		r := run(t, real, t.TempDir(), "cli", nil, nil, "--help")
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("the command line's --help: exit %d, stderr %s", r.code, r.stderr)
		}
		if err := os.WriteFile("help.txt", []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Skip("rewrote help.txt; run the test again without -update to compare")
	}
	frontDir := install(t, binaries.Front) // alone: nothing to exec
	emptyPath := t.TempDir()
	for _, args := range [][]string{nil, {"help"}, {"-h"}, {"--help"}, {"version"}} {
		want := run(t, real, emptyPath, "cli", nil, nil, args...)
		got := run(t, filepath.Join(frontDir, binaries.Front), emptyPath, "", nil, nil, args...)
		if got != want {
			t.Errorf("agentpool %q:\nfront:        %+v\ncommand line: %+v\n(after a change to the command tree: go test ./cmd/agentpool -run %s -update)",
				args, got, want, t.Name())
		}
	}
	if !strings.Contains(help, "Usage:\n  agentpool [command]") {
		t.Errorf("help.txt is not the command line's help:\n%s", help)
	}
}

// TestFrontExecsTheCommandLine: every other command line runs in the
// command line in the front's place: the same process, the arguments as
// given, the environment (with the front's mark), stdin, and its exit
// status.
func TestFrontExecsTheCommandLine(t *testing.T) {
	dir := install(t, binaries.Front, binaries.Light)
	emptyPath := t.TempDir()
	for _, args := range [][]string{
		{"run", "two words", "", "ünï\tcode", "--flag=x"},
		{"version", "--help"}, {"help", "run"}, {"--version"}, {"-h", "run"}, {"sessions"},
	} {
		r := run(t, filepath.Join(dir, binaries.Front), emptyPath, "report", []string{probeEnv + "=kept", exitEnv + "=3"},
			strings.NewReader("input\n"), args...)
		rep := decodeReport(t, r)
		if r.code != 3 || r.stderr != "" || rep.Name != binaries.Light || !slices.Equal(rep.Args, args) ||
			rep.FromFront != "1" || rep.Probe != "kept" || rep.Stdin != "input\n" {
			t.Errorf("agentpool %q: exit %d, stderr %q, %+v", args, r.code, r.stderr, rep)
		}
	}
}

// TestFrontKeepsTheProcess: the command line runs as the process the
// front was (so a signal sent to it reaches the command line), with the
// front's terminal.
func TestFrontKeepsTheProcess(t *testing.T) {
	dir := install(t, binaries.Front, binaries.Light)
	t.Run("signals", func(t *testing.T) {
		cmd := exec.Command(filepath.Join(dir, binaries.Front), "serve", "acp")
		cmd.Env = append(os.Environ(), "PATH="+t.TempDir(), siblingEnv+"=signal")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line != fmt.Sprintf("ready %d\n", cmd.Process.Pid) {
			t.Fatalf("the command line says %q; the front's pid is %d", line, cmd.Process.Pid)
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		var ee *exec.ExitError
		if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGINT) {
			t.Errorf("after SIGINT to the front's pid: %v, want exit %d", err, 128+int(syscall.SIGINT))
		}
	})
	t.Run("terminal", func(t *testing.T) {
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pseudo terminal: %v", err)
		}
		defer ptmx.Close()
		cmd := exec.Command(filepath.Join(dir, binaries.Front), "run")
		cmd.Env = append(os.Environ(), "PATH="+t.TempDir(), siblingEnv+"=report")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tty.Close()
		var screen bytes.Buffer
		copied := make(chan struct{})
		go func() { io.Copy(&screen, ptmx); close(copied) }() // ends with EIO when the terminal closes
		if err := cmd.Wait(); err != nil {
			t.Errorf("exit: %v", err)
		}
		<-copied
		s := strings.ReplaceAll(screen.String(), "\r\n", "\n")
		var rep report
		if err := json.Unmarshal([]byte(s), &rep); err != nil {
			t.Fatalf("not a report: %v\n%s", err, s)
		}
		if !rep.StdinTTY || !rep.StdoutTTY {
			t.Errorf("the command line lost the terminal: %+v", rep)
		}
	})
}

// TestFrontFindsTheCommandLine: agentpool-light next to the front (links
// resolved), else agentpool-full next to it, else either on PATH; without
// any, an error that says how to get one.
func TestFrontFindsTheCommandLine(t *testing.T) {
	emptyPath := t.TempDir()
	whoRuns := func(t *testing.T, front, pathDir string) string {
		t.Helper()
		r := run(t, front, pathDir, "report", nil, nil, "validate", "x.yaml")
		return decodeReport(t, r).Name
	}
	both := install(t, binaries.Front, binaries.Light, binaries.Full)
	if got := whoRuns(t, filepath.Join(both, binaries.Front), emptyPath); got != binaries.Light {
		t.Errorf("with both next to it: %s ran", got)
	}
	fullOnly := install(t, binaries.Front, binaries.Full)
	if got := whoRuns(t, filepath.Join(fullOnly, binaries.Front), emptyPath); got != binaries.Full {
		t.Errorf("with agentpool-full next to it: %s ran", got)
	}
	link := filepath.Join(t.TempDir(), binaries.Front)
	if err := os.Symlink(filepath.Join(both, binaries.Front), link); err != nil {
		t.Fatal(err)
	}
	if got := whoRuns(t, link, emptyPath); got != binaries.Light {
		t.Errorf("through a link to the front: %s ran", got)
	}
	alone := install(t, binaries.Front)
	onPath := install(t, binaries.Light)
	if got := whoRuns(t, filepath.Join(alone, binaries.Front), onPath); got != binaries.Light {
		t.Errorf("with agentpool-light on PATH: %s ran", got)
	}

	r := run(t, filepath.Join(alone, binaries.Front), emptyPath, "report", nil, nil, "run", "hi")
	for _, want := range []string{
		`agentpool: agentpool "run" needs the agentpool command line, agentpool-light (or agentpool-full), but it is neither in ` + alone + " nor on PATH",
		"`make build`", "`go install github.com/agentpool/agentpool/cmd/...@latest`", "`go run ./cmd/agentpool-light`",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("without a command line: stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if r.code != 1 || r.stdout != "" {
		t.Errorf("without a command line: exit %d, stdout %q", r.code, r.stdout)
	}

	// An agentpool-light that is the front again would exec itself for
	// ever.
	r = run(t, filepath.Join(both, binaries.Front), emptyPath, "front", nil, nil, "run", "hi")
	if r.code != 1 || !strings.Contains(r.stderr, "is the front binary again") {
		t.Errorf("a front as agentpool-light: exit %d, stderr %s", r.code, r.stderr)
	}
}

// TestFrontThenCommandLine: a run through the front and the real command
// line; the front's mark is gone from what the run's commands see.
func TestFrontThenCommandLine(t *testing.T) {
	dir := install(t, binaries.Front, binaries.Light)
	work := t.TempDir()
	manifest := filepath.Join(work, "agentpool.yaml")
	os.WriteFile(manifest, []byte(`agents:
  a:
    tools: [execution]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Bash, args: {command: "echo mark=${`+binaries.EnvFromFront+`:-unset}"}}]
        - text: done
`), 0o644)
	// PATH as it is: the shell tool needs it.
	r := run(t, filepath.Join(dir, binaries.Front), "", "cli", nil, nil,
		"run", "-c", manifest, "--db", ":memory:", "--workspace", work, "--allow", "Bash", "--output", "jsonl", "go")
	if r.code != 0 || !strings.Contains(r.stdout, `mark=unset`) {
		t.Errorf("exit %d; the shell saw the front's mark, or did not run:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A failed write of the answer is a failure.
func TestFrontWriteFails(t *testing.T) {
	var stderr bytes.Buffer
	execve := func(string, []string, []string) error { t.Error("exec for version"); return nil }
	if code := front([]string{"version"}, failingWriter{}, &stderr, execve); code != 1 || stderr.String() != "agentpool: no space left on device\n" {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestFrontLinksLittle: the front links the standard library and
// internal/binaries, nothing else: it must start as fast as a Go program
// can (BENCHMARKS.md, "Start-up").
func TestFrontLinksLittle(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	got := strings.Fields(string(out))
	want := []string{"github.com/agentpool/agentpool/internal/binaries", "github.com/agentpool/agentpool/cmd/agentpool"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the front links %q, want only %q", got, want)
	}

	// The standard library packages the two import, each for a reason: a
	// new one is a choice to make here (its init runs at every start).
	allowed := map[string]string{
		"embed": "help.txt", "fmt": "errors", "io": "writing the answer", "os": "arguments, files",
		"os/exec": "LookPath (Find)", "path/filepath": "Find", "syscall": "execve", "strings": "VersionText",
		"runtime": "the Go release and platform (version)",
		// ReadBuildInfo: the commit go build recorded (version); no init
		// of its own that runtime does not already run.
		"runtime/debug": "the commit (version)",
	}
	out, err = exec.Command("go", "list", "-f", "{{join .Imports \"\\n\"}}", ".", "../../internal/binaries").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if _, ok := allowed[p]; !ok && !slices.Contains(want, p) {
			t.Errorf("the front imports %s, which TestFrontLinksLittle does not allow", p)
		}
	}
}
