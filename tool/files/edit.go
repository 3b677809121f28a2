package files

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/tool"
)

// snippetContext is the number of unchanged lines Edit shows around the
// first change; snippetMaxLines bounds the snippet.
const (
	snippetContext  = 3
	snippetMaxLines = 40
)

func (t *Toolset) edit(ctx context.Context, call tool.Call, a editArgs) tool.Result {
	root, errRes := t.open(ctx)
	if errRes != nil {
		return *errRes
	}
	defer root.Close()
	abs, errRes := confine(root, a.FilePath, "file_path")
	if errRes != nil {
		return *errRes
	}
	if a.OldString == a.NewString {
		return tool.Errorf("No changes to make: old_string and new_string are exactly the same.")
	}
	defer t.lockPath(abs)()
	tg, errRes := t.load(ctx, root, abs, true)
	if errRes != nil {
		return *errRes
	}
	if !tg.exists {
		if a.OldString != "" {
			return tool.Errorf("File does not exist: %s. To create a file, use Write (or Edit with an empty old_string).", abs)
		}
		// An empty old_string creates the file.
		if errRes := t.store(ctx, call, tg, a.NewString); errRes != nil {
			return *errRes
		}
		return tool.Result{
			Content:   fmt.Sprintf("Created %s (%s).", abs, plural(countText(a.NewString), "line", "lines")),
			Locations: []tool.Location{{Path: abs, Line: 1}},
			Diffs:     diff(abs, nil, false, a.NewString),
			Metadata:  map[string]any{"created": true, "replacements": 1, "line": 1},
		}
	}
	if errRes := t.checkRead(call.SessionID, tg); errRes != nil {
		return *errRes
	}
	old := *tg.text
	if a.OldString == "" {
		if old != "" {
			return tool.Errorf("old_string is empty, but %s is not: give the exact text to replace, or use Write to replace the whole file.", abs)
		}
		if errRes := t.store(ctx, call, tg, a.NewString); errRes != nil {
			return *errRes
		}
		return tool.Result{
			Content:   fmt.Sprintf("Edited %s: wrote %s into the empty file.", abs, plural(countText(a.NewString), "line", "lines")),
			Locations: []tool.Location{{Path: abs, Line: 1}},
			Diffs:     diff(abs, tg.text, true, a.NewString),
			Metadata:  map[string]any{"replacements": 1, "line": 1},
		}
	}

	from, to := matchEndings(old, a.OldString, a.NewString)
	count := strings.Count(old, from)
	switch {
	case count == 0:
		return tool.Errorf("String to replace not found in file %s. old_string must match the file's text exactly, "+
			"including whitespace and indentation (and without Read's line-number prefixes); Read the file again to see its current content.", abs)
	case count > 1 && !a.ReplaceAll:
		return tool.Errorf("Found %d matches of the string to replace in %s, but replace_all is false. To replace every match, "+
			"set replace_all to true; to replace only one, add more surrounding context to old_string so that it matches exactly one place.", count, abs)
	}
	n := 1
	if a.ReplaceAll {
		n = -1
	}
	content := strings.Replace(old, from, to, n)
	at := strings.Index(old, from)
	line := 1 + strings.Count(old[:at], "\n")
	if errRes := t.store(ctx, call, tg, content); errRes != nil {
		return *errRes
	}
	return tool.Result{
		Content: fmt.Sprintf("Edited %s: %s (first at line %d). The edited region now reads:\n%s",
			abs, plural(count, "replacement", "replacements"), line, snippet(content, at, len(to), line)),
		Locations: []tool.Location{{Path: abs, Line: line}},
		Diffs:     diff(abs, tg.text, true, content),
		Metadata:  map[string]any{"replacements": count, "line": line},
	}
}

// matchEndings returns the strings to replace and to insert in a file's
// line endings: when old_string is not found as given, it is tried with the
// file's line endings; the new text gets the file's line endings.
func matchEndings(content, old, new string) (string, string) {
	crlf := strings.Count(content, "\r\n")
	if crlf == 0 || crlf*2 < strings.Count(content, "\n") {
		// LF file (mostly): leave both as the model wrote them unless old
		// only matches without carriage returns.
		if !strings.Contains(content, old) && strings.Contains(old, "\r\n") {
			return toLF(old), toLF(new)
		}
		return old, new
	}
	newCRLF := toCRLF(new)
	if strings.Contains(content, old) {
		return old, newCRLF
	}
	return toCRLF(old), newCRLF
}

func toLF(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

func toCRLF(s string) string { return strings.ReplaceAll(toLF(s), "\n", "\r\n") }

// snippet shows, numbered like Read, the lines of content around the
// replacement of n bytes at byte at, which starts on line.
func snippet(content string, at, n, line int) string {
	start := at
	for i := 0; i <= snippetContext && start > 0; {
		if content[start-1] == '\n' {
			i++
			if i > snippetContext {
				break
			}
		}
		start--
	}
	first := line - strings.Count(content[start:at], "\n")
	end := at + n
	if n > 0 && content[end-1] == '\n' {
		end-- // the replacement ends its last line
	}
	for i := 0; end < len(content); end++ {
		if content[end] == '\n' {
			i++
			if i > snippetContext {
				break
			}
		}
	}
	region := content[start:end]
	if end == len(content) {
		region = strings.TrimSuffix(region, "\n")
	}
	lines := strings.Split(region, "\n")
	var sb strings.Builder
	for i, l := range lines {
		if i == snippetMaxLines {
			fmt.Fprintf(&sb, "... (%s more)\n", plural(len(lines)-i, "line", "lines"))
			break
		}
		s, cut := cutRunes([]byte(strings.TrimSuffix(l, "\r")), maxLineChars)
		if cut {
			s += "... [line truncated]"
		}
		fmt.Fprintf(&sb, "%6d\t%s\n", first+i, s)
	}
	return sb.String()
}
