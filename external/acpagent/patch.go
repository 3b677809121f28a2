package acpagent

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// applyPatch applies a unified diff (one file's: "---"/"+++" headers and
// "@@ -a,b +c,d @@" hunks, "\ No newline at end of file" markers) to
// old. Every context and removed line must match old exactly, so a diff
// made against other content is an error, never a guess: that is what
// lets a write be judged the approved change of the file as it is now.
func applyPatch(old, diff string) (string, error) {
	oldLines := strings.SplitAfter(old, "\n")
	if oldLines[len(oldLines)-1] == "" {
		oldLines = oldLines[:len(oldLines)-1]
	}
	lines := strings.Split(diff, "\n")
	var out strings.Builder
	cur, hunks := 0, 0
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "@@ ") {
			continue
		}
		start, n, err := hunkOld(lines[i])
		if err != nil {
			return "", err
		}
		hunks++
		at := start - 1 // the hunk's first old line, 0-based
		if n == 0 {
			at = start // an insertion after line start
		}
		if at < cur || at > len(oldLines) {
			return "", fmt.Errorf("hunk %q is out of order or past the end", lines[i])
		}
		for ; cur < at; cur++ {
			out.WriteString(oldLines[cur])
		}
		for i+1 < len(lines) && lines[i+1] != "" && strings.ContainsRune(" -+", rune(lines[i+1][0])) {
			i++
			op, text := lines[i][0], lines[i][1:]+"\n"
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], `\`) {
				text = text[:len(text)-1] // "\ No newline at end of file"
				i++
			}
			if op != '+' {
				if cur >= len(oldLines) || oldLines[cur] != text {
					return "", fmt.Errorf("line %d of the file is not the diff's %q", cur+1, strings.TrimSuffix(text, "\n"))
				}
				cur++
			}
			if op != '-' {
				out.WriteString(text)
			}
		}
	}
	if hunks == 0 {
		return "", errors.New("the diff has no hunk")
	}
	for ; cur < len(oldLines); cur++ {
		out.WriteString(oldLines[cur])
	}
	return out.String(), nil
}

// hunkOld parses the old range of a hunk header: "@@ -start[,n] ...".
func hunkOld(header string) (start, n int, err error) {
	f := strings.Fields(header)
	if len(f) < 3 || !strings.HasPrefix(f[1], "-") {
		return 0, 0, fmt.Errorf("bad hunk header %q", header)
	}
	s, c, found := strings.Cut(f[1][1:], ",")
	n = 1
	if start, err = strconv.Atoi(s); err == nil && found {
		n, err = strconv.Atoi(c)
	}
	if err != nil || start < 0 || n < 0 {
		return 0, 0, fmt.Errorf("bad hunk header %q", header)
	}
	return start, n, nil
}
