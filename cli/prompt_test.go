package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"
)

// TestRunPromptFromStdin: `run -` runs on stdin's text, kept whole (its
// lines too); an empty stdin and one over the bound are refused before the
// pool starts, with an error that says so.
func TestRunPromptFromStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte("agents:\n  solo:\n    model: {type: test, custom_output_text: ok}\n"), 0o644)
	db := filepath.Join(dir, "s.db")
	run := func(stdin string, args ...string) cliResult {
		cmd := exec.Command(cliBinary(t), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
		cmd.Stdin = strings.NewReader(stdin)
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
		return cliResult{out.String(), errb.String(), code}
	}
	prompt := "first line\nsecond \"line\" - with a dash\n"
	r := run(prompt, "run", "--db", db, "-")
	id := regexp.MustCompile(`session (ses_\w+)`).FindStringSubmatch(r.stderr)
	if r.code != 0 || r.stdout != "ok\n" || id == nil {
		t.Fatalf("run -: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run("", "sessions", "show", "--db", db, id[1])
	if r.code != 0 || !strings.Contains(r.stdout, "\n"+prompt) {
		t.Errorf("the stored prompt is not stdin's text %q:\n%s%s", prompt, r.stdout, r.stderr)
	}

	for _, c := range []struct{ stdin, want string }{
		{"", "agentpool: run -: stdin is empty"},
		{" \n\t\n", "agentpool: run -: stdin is empty"},
		{strings.Repeat("a", maxStdinPrompt+1), "agentpool: run -: the prompt on stdin is larger than 4 MiB"},
	} {
		r := run(c.stdin, "run", "--db", db, "-")
		if r.code != 1 || r.stdout != "" || !strings.HasPrefix(r.stderr, c.want) {
			t.Errorf("stdin of %d bytes: exit %d, stdout %q, stderr %q; want %q", len(c.stdin), r.code, r.stdout, r.stderr, c.want)
		}
	}
}

// TestPromptArg: words are joined; "-" is stdin only when it is the only
// word; exactly the bound is accepted; a read error is reported.
func TestPromptArg(t *testing.T) {
	if p, err := promptArg([]string{"a", "-", "b"}, strings.NewReader("x")); p != "a - b" || err != nil {
		t.Errorf("words with a dash: %q, %v", p, err)
	}
	full := strings.Repeat("b", maxStdinPrompt)
	if p, err := promptArg([]string{"-"}, strings.NewReader(full)); p != full || err != nil {
		t.Errorf("a prompt of exactly %d bytes: %d bytes, %v", maxStdinPrompt, len(p), err)
	}
	_, err := promptArg([]string{"-"}, iotest.ErrReader(errors.New("input/output error")))
	if err == nil || err.Error() != "run -: reading the prompt from stdin: input/output error" {
		t.Errorf("a failed read: %v", err)
	}
}
