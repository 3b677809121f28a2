package code

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/workspace"
)

// Tool names, AgentPool's.
const (
	FormatCode = "format_code"
	ASTGrep    = "ast_grep"
)

// Toolset is the code tools acting in one workspace.
type Toolset struct {
	ws *workspace.Workspace
	// lookPath finds a program (exec.LookPath; tests name their own).
	lookPath func(string) (string, error)
}

// New returns the code tools of ws.
func New(ws *workspace.Workspace) *Toolset {
	return &Toolset{ws: ws, lookPath: exec.LookPath}
}

// Tools returns format_code and ast_grep.
func (t *Toolset) Tools() []tool.Tool {
	return []tool.Tool{
		tool.WithKind(tool.New(FormatCode, formatDescription, t.formatCode), tool.KindEdit),
		tool.WithKind(tool.New(ASTGrep, astGrepDescription, t.astGrep), tool.KindSearch),
	}
}

const formatDescription = "Format a source file in place with the standard formatter of its language " +
	"(gofmt for Go, ruff or black for Python, rustfmt, prettier for JavaScript/TypeScript/JSON/CSS/HTML/YAML/Markdown, " +
	"clang-format for C/C++/Java/C#, shfmt, stylua, ...). The language is detected from the file extension unless given. " +
	"Fails, leaving the file unchanged, when the formatter is not installed or reports a syntax error."

type formatArgs struct {
	Path     string `json:"path" jsonschema:"description=Path of the file to format, absolute or relative to the workspace"`
	Language string `json:"language,omitempty" jsonschema:"description=Language of the file (go, python, rust, typescript, ...); detected from the extension when empty"`
}

// file is a workspace file read for a tool.
type file struct {
	root *workspace.Root
	abs  string
	data []byte
	mode os.FileMode
}

// readFile resolves and reads path through the workspace's os.Root.
func (t *Toolset) readFile(ctx context.Context, path string) (*file, error) {
	if path == "" {
		return nil, fmt.Errorf("path is required")
	}
	ws := workspace.From(ctx, t.ws)
	abs, err := ws.Resolve(path)
	if err != nil {
		return nil, err
	}
	root, err := ws.Open()
	if err != nil {
		return nil, err
	}
	f, err := root.OpenFile(abs, os.O_RDONLY, 0)
	if err != nil {
		root.Close()
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		root.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		root.Close()
		return nil, fmt.Errorf("%s is not a regular file", abs)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		root.Close()
		return nil, err
	}
	if len(data) > maxFileSize {
		root.Close()
		return nil, fmt.Errorf("%s is larger than %d bytes", abs, maxFileSize)
	}
	return &file{root: root, abs: abs, data: data, mode: st.Mode().Perm()}, nil
}

// write replaces the file's content through the os.Root.
func (f *file) write(data []byte) error {
	w, err := f.root.OpenFile(f.abs, os.O_WRONLY|os.O_TRUNC, f.mode)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func (t *Toolset) formatCode(ctx context.Context, call tool.Call, a formatArgs) (tool.Result, error) {
	lang := strings.ToLower(strings.TrimSpace(a.Language))
	if lang == "" {
		lang = languageOf(a.Path)
	}
	cands, ok := formatters[lang]
	if !ok {
		if lang == "" {
			return tool.Errorf("Cannot tell the language of %s from its extension; give language (one of %s)", a.Path, strings.Join(formatterLanguages(), ", ")), nil
		}
		return tool.Errorf("No formatter is known for language %q; known: %s", lang, strings.Join(formatterLanguages(), ", ")), nil
	}
	var fm formatter
	var bin string
	for _, c := range cands {
		if p, err := t.lookPath(c.bin); err == nil {
			fm, bin = c, p
			break
		}
	}
	if bin == "" {
		var need []string
		for _, c := range cands {
			need = append(need, c.install)
		}
		return tool.Errorf("No formatter for %s is installed: install %s", lang, strings.Join(need, ", or ")), nil
	}
	f, err := t.readFile(ctx, a.Path)
	if err != nil {
		return tool.Errorf("Cannot read the file: %v", err), nil
	}
	defer f.root.Close()
	name := f.abs[strings.LastIndexByte(f.abs, '/')+1:]
	r, err := runProgram(ctx, f.root.Workspace().Root(), bin, fm.args(name), f.data)
	if err != nil {
		return tool.Errorf("%s failed: %v; the file is unchanged", fm.bin, err), nil
	}
	if r.code != 0 {
		return tool.Errorf("%s could not format %s (exit code %d); the file is unchanged:\n%s", fm.bin, f.abs, r.code, strings.TrimSpace(string(r.stderr))), nil
	}
	rel := f.root.Workspace().Rel(f.abs)
	md := map[string]any{"formatter": fm.bin, "language": lang}
	if bytes.Equal(r.stdout, f.data) {
		md["changed"] = false
		return tool.Result{Content: fmt.Sprintf("%s is already formatted (%s).", rel, fm.bin), Metadata: md, Locations: []tool.Location{{Path: f.abs}}}, nil
	}
	if len(bytes.TrimSpace(r.stdout)) == 0 && len(bytes.TrimSpace(f.data)) != 0 {
		return tool.Errorf("%s printed nothing for a non-empty file; the file is unchanged", fm.bin), nil
	}
	if err := f.write(r.stdout); err != nil {
		return tool.Errorf("Cannot write the formatted file: %v", err), nil
	}
	md["changed"] = true
	old := string(f.data)
	return tool.Result{
		Content:   fmt.Sprintf("Formatted %s with %s.", rel, fm.bin),
		Locations: []tool.Location{{Path: f.abs}},
		Diffs:     []tool.Diff{{Path: f.abs, OldText: &old, NewText: string(r.stdout)}},
		Metadata:  md,
	}, nil
}
