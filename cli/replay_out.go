package cli

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentpool/agentpool/config"
)

// writeReplayText is replay's human summary: each run's answers, recorded
// and now, then (with the cassette) what was compared and every
// divergence, one line of each value.
func writeReplayText(w io.Writer, rep replayReport) error {
	mode := "recorded answers"
	if rep.Mode == "model" {
		mode = "model " + rep.Model
	}
	fmt.Fprintf(w, "replay of session %s (%s) with the %s\n", rep.Session, rep.Agent, mode)
	for i, r := range rep.Runs {
		fmt.Fprintf(w, "run %d: %s\n", i+1, clip(r.Prompt, 100))
		if r.Recorded != nil {
			fmt.Fprintf(w, "  recorded  %s · %s\n", r.Recorded.Stop, clip(r.Recorded.Answer, 160))
		}
		fmt.Fprintf(w, "  now       %s · %s\n", clip(r.Now.Stop, 100), clip(r.Now.Answer, 160))
	}
	res := rep.Result
	if res == nil {
		_, err := fmt.Fprintln(w, "model answers are not compared with the recording")
		return err
	}
	fmt.Fprintf(w, "compared %d steps of %d sessions (%d replayed), %d of %d recorded model answers used\n",
		res.Steps, res.Sessions, res.Replayed, res.Answered, res.ModelCalls)
	if len(res.Divergences) == 0 {
		_, err := fmt.Fprintln(w, "✓ reproduced: no divergence")
		return err
	}
	fmt.Fprintf(w, "✗ %d divergences\n", len(res.Divergences))
	for _, d := range res.Divergences {
		where := fmt.Sprintf("turn %d", d.Turn)
		if d.Key != "" {
			where += " " + d.Key
		}
		fmt.Fprintf(w, "  %s (%s) %s %s\n", d.Session, d.Agent, where, d.Kind)
		fmt.Fprintf(w, "    recorded  %s\n", orNone(d.Recorded))
		fmt.Fprintf(w, "    now       %s\n", orNone(d.Now))
	}
	return nil
}

func orNone(s *string) string {
	if s == nil {
		return "(nothing)"
	}
	return clip(*s, 200)
}

// clip is s on one line, cut to n runes.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// Bounds of the workspace copy a replay runs in; a larger workspace is
// replayed in place with --workspace.
const (
	maxCopyFiles = 20000
	maxCopyBytes = 512 << 20
)

// copyWorkspace copies the manifest's workspace (else the current
// directory) into a new temporary directory: the replay's tools change
// the copy, never the user's files. Symbolic links are copied as links;
// other special files are left out.
func copyWorkspace(m *config.Manifest) (string, error) {
	src := "."
	if m.Workspace != "" {
		src = m.ResolvePath(m.Workspace)
	}
	src, err := filepath.Abs(src)
	if err != nil {
		return "", err
	}
	dst, err := os.MkdirTemp("", "agentpool-replay-")
	if err != nil {
		return "", err
	}
	files, size := 0, int64(0)
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if files++; files > maxCopyFiles {
			return fmt.Errorf("more than %d files", maxCopyFiles)
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case info.Mode().IsRegular():
			if size += info.Size(); size > maxCopyBytes {
				return fmt.Errorf("more than %d MiB", maxCopyBytes>>20)
			}
			return copyFile(p, to, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		os.RemoveAll(dst)
		return "", fmt.Errorf("copy the workspace %s for the replay: %w (replay in place with --workspace DIR)", src, err)
	}
	return dst, nil
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
