package opencode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/sessiontree"
)

// openTools maps the pool's builtin tools (Claude Code's names and input
// fields) to OpenCode's own tools, so that the OpenCode TUI and SDK render
// them with their native views (a diff for edit, the command and its
// output for bash, the checklist for todowrite, ...):
//
//	ours        OpenCode    input (renamed fields; the others keep their names)
//	Read        read        file_path→filePath, offset, limit
//	Write       write       file_path→filePath, content
//	Edit        edit        file_path→filePath, old_string→oldString,
//	                        new_string→newString, replace_all→replaceAll
//	Glob        glob        pattern, path
//	Grep        grep        pattern, path, glob→include (output_mode, -i, -n,
//	                        head_limit, ... kept as they are)
//	LS          list        path, ignore
//	Bash        bash        command, timeout (ms), description (run_in_background kept)
//	TodoWrite   todowrite   todos: [{content, status, priority ("medium")}]
//	                        (activeForm kept)
//	WebFetch    webfetch    url, format ("markdown"), prompt kept
//
// The state's title is OpenCode's (the file path relative to the
// workspace for read, write and edit; the directory for list; the pattern
// for glob and grep; the description, else the command, for bash; "N
// todos" (those not completed) for todowrite; the URL for webfetch). Its
// output is the tool's result text. Its metadata is the tool's own
// (exit_code, truncated, ...) with what OpenCode's renderers read added:
// see the meta functions below.
//
// Any other tool keeps its name, input, title and metadata: BashOutput,
// KillShell, task and ask_<worker> (delegation) and MCP tools, which stay
// mcp__<server>__<tool> (OpenCode names its MCP tools <server>_<tool>, a
// name that cannot be told apart from a builtin's; ours is the name that
// permissions, hooks and the model use, and OpenCode shows any unknown
// tool with its generic view).
var openTools = map[string]openTool{
	"Read":      {name: "read", fields: map[string]string{"file_path": "filePath"}, title: fileTitle, meta: readMeta},
	"Write":     {name: "write", fields: map[string]string{"file_path": "filePath"}, title: fileTitle, meta: writeMeta},
	"Edit":      {name: "edit", fields: map[string]string{"file_path": "filePath", "old_string": "oldString", "new_string": "newString", "replace_all": "replaceAll"}, title: fileTitle, meta: editMeta},
	"Glob":      {name: "glob", title: patternTitle, meta: countMeta("count", "matches")},
	"Grep":      {name: "grep", fields: map[string]string{"glob": "include"}, title: patternTitle, meta: countMeta("matches", "files")},
	"LS":        {name: "list", title: dirTitle, meta: countMeta("count", "entries")},
	"Bash":      {name: "bash", title: bashTitle, meta: bashMeta},
	"TodoWrite": {name: "todowrite", input: todoInput, title: todoTitle, meta: todoMeta},
	"WebFetch":  {name: "webfetch", input: webfetchInput, title: webfetchTitle},
}

// openTool is one row of openTools.
type openTool struct {
	name   string            // OpenCode's tool name
	fields map[string]string // input fields renamed
	input  func(in map[string]any)
	title  func(root string, c *toolCall) string
	// meta adds OpenCode's metadata of a finished call to out (which
	// holds the tool's own).
	meta func(c *toolCall, out map[string]any)
}

// toolCall is what the mapping reads of one call: the projection's tool
// part (live) or the stored conversation and event log (history).
type toolCall struct {
	name      string
	title     string           // the title the tool gave
	locations []event.Location // the files it touches
	// Of a finished call:
	done    bool
	isError bool
	output  string
	diffs   []event.FileDiff
	meta    map[string]any
	// input is the input of a mapped call, renamed (set by viewTool).
	input map[string]any
}

// toolView is a tool part as OpenCode shows it.
type toolView struct {
	tool  string
	input json.RawMessage
	title string
	meta  map[string]any // OpenCode's metadata of a finished call (nil before)
}

// partCall reads a tool part of the projection.
func partCall(p sessiontree.Part) *toolCall {
	st := p.State
	c := &toolCall{name: p.Tool, title: st.Title, locations: st.Locations}
	switch st.Status {
	case sessiontree.ToolCompleted:
		c.done, c.output = true, st.Output
	case sessiontree.ToolError:
		c.done, c.isError, c.output = true, true, st.Error
	}
	if c.done {
		c.diffs, c.meta = st.Diffs, st.ToolMetadata
	}
	return c
}

// viewTool maps one call whose input is raw (root: the workspace, for
// relative paths).
func viewTool(root string, c *toolCall, raw json.RawMessage) toolView {
	ot, ok := openTools[c.name]
	if !ok {
		v := toolView{tool: c.name, input: objectJSON(raw), title: c.title}
		if c.name == "task" {
			v.input = withSubagentType(v.input)
		}
		if c.done {
			v.meta = maps.Clone(c.meta)
		}
		return v
	}
	v := toolView{tool: ot.name, input: json.RawMessage("{}"), title: c.title}
	if obj := decodeObject(raw); obj != nil {
		in := make(map[string]any, len(obj))
		for k, val := range obj {
			if to, ok := ot.fields[k]; ok {
				k = to
			}
			in[k] = val
		}
		if ot.input != nil {
			ot.input(in)
		}
		c.input = in
		if b, err := json.Marshal(in); err == nil {
			v.input = b
		}
		if t := ot.title(root, c); t != "" {
			v.title = t
		}
	}
	if c.done && (!c.isError || c.meta != nil || len(c.diffs) > 0) {
		// (A call that failed without a report of the tool's, refused or
		// cut short, has no metadata.)
		v.meta = maps.Clone(c.meta)
		if v.meta == nil {
			v.meta = map[string]any{}
		}
		if ot.meta != nil {
			ot.meta(c, v.meta)
		}
	}
	return v
}

// decodeObject decodes a JSON object (numbers kept as written), or nil.
func decodeObject(raw json.RawMessage) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

// Titles.

// relPath is p relative to the workspace root when it lies inside it.
func relPath(root, p string) string {
	if p == "" || !filepath.IsAbs(p) {
		return filepath.ToSlash(filepath.Clean(p))
	}
	if root != "" {
		if r, err := filepath.Rel(root, p); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(r)
		}
	}
	return p
}

// filePath is the absolute path of the call's file when the tool named
// it, else the input's.
func (c *toolCall) filePath() string {
	if len(c.locations) > 0 && c.locations[0].Path != "" {
		return c.locations[0].Path
	}
	if len(c.diffs) > 0 {
		return c.diffs[0].Path
	}
	return strOf(c.input["filePath"])
}

func fileTitle(root string, c *toolCall) string {
	if p := c.filePath(); p != "" {
		return relPath(root, p)
	}
	return ""
}

func dirTitle(root string, c *toolCall) string {
	p := strOf(c.input["path"])
	if len(c.locations) > 0 {
		p = c.locations[0].Path
	}
	if p == "" {
		return "."
	}
	return relPath(root, p)
}

func patternTitle(_ string, c *toolCall) string { return strOf(c.input["pattern"]) }

func bashTitle(_ string, c *toolCall) string {
	if d := strOf(c.input["description"]); d != "" {
		return d
	}
	return strOf(c.input["command"])
}

func todoTitle(_ string, c *toolCall) string {
	n := 0
	for _, t := range todosOf(c.input["todos"]) {
		if t.Status != "completed" {
			n++
		}
	}
	return fmt.Sprintf("%d todos", n)
}

func webfetchTitle(_ string, c *toolCall) string {
	u := strOf(c.input["url"])
	if ct := strOf(c.meta["content_type"]); u != "" && ct != "" {
		return u + " (" + ct + ")"
	}
	return u
}

// Inputs.

// todoInput gives every todo OpenCode's priority (ours have none).
func todoInput(in map[string]any) {
	items, ok := in["todos"].([]any)
	if !ok {
		return
	}
	out := make([]any, len(items))
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			out[i] = it
			continue
		}
		c := maps.Clone(m)
		if _, set := c["priority"]; !set {
			c["priority"] = "medium"
		}
		out[i] = c
	}
	in["todos"] = out
}

// webfetchInput names the format WebFetch returns (readable text with
// markdown headings and lists).
func webfetchInput(in map[string]any) {
	if _, set := in["format"]; !set && in["url"] != nil {
		in["format"] = "markdown"
	}
}

// Metadata of finished calls: what OpenCode's TUI and web renderers read.

// readMeta: preview (the first 20 lines shown, without line numbers),
// truncated, loaded (instruction files OpenCode adds; none).
func readMeta(c *toolCall, out map[string]any) {
	out["truncated"] = out["truncated"] == true
	out["loaded"] = []any{}
	if !c.isError {
		out["preview"] = readPreview(c.output, 20)
	}
}

// readPreview is the text of the first n numbered lines of a Read result
// ("     1\tline").
func readPreview(result string, n int) string {
	var lines []string
	for _, l := range strings.SplitN(result, "\n", n+1) {
		if len(lines) == n {
			break
		}
		num, text, ok := strings.Cut(l, "\t")
		if !ok || strings.TrimLeft(num, " 0123456789") != "" || strings.TrimSpace(num) == "" {
			break
		}
		lines = append(lines, text)
	}
	return strings.Join(lines, "\n")
}

// writeMeta: diagnostics (none; the TUI shows the written content once
// the key is there), filepath, exists, and the diff.
func writeMeta(c *toolCall, out map[string]any) {
	out["diagnostics"] = map[string]any{}
	if p := c.filePath(); p != "" {
		out["filepath"] = p
	}
	if !c.isError {
		out["exists"] = out["created"] != true
	}
	diffMeta(c, out)
}

// editMeta: diagnostics (none), diff, filediff.
func editMeta(c *toolCall, out map[string]any) {
	out["diagnostics"] = map[string]any{}
	diffMeta(c, out)
}

// maxDiffText bounds the before and after texts of a filediff: a larger
// file's filediff has only its patch (every event and the history would
// carry the whole file twice).
const maxDiffText = 256 << 10

// diffMeta adds diff (a unified diff of every changed file) and filediff
// (the first file's change: file and path, before and after, patch,
// additions, deletions and status, the union of the shapes OpenCode's
// versions read).
func diffMeta(c *toolCall, out map[string]any) {
	if len(c.diffs) == 0 {
		return
	}
	var all strings.Builder
	for i, d := range c.diffs {
		before, status := "", "added"
		if d.OldText != nil {
			before, status = *d.OldText, "modified"
		}
		patch, add, del := unifiedDiff(d.Path, before, d.NewText)
		all.WriteString(patch)
		if i == 0 {
			fd := map[string]any{"file": d.Path, "path": d.Path, "patch": patch, "additions": add, "deletions": del, "status": status}
			if len(before) <= maxDiffText && len(d.NewText) <= maxDiffText {
				fd["before"], fd["after"] = before, d.NewText
			}
			out["filediff"] = fd
		}
	}
	out["diff"] = all.String()
}

// countMeta sets OpenCode's count key from ours, and truncated.
func countMeta(theirs, ours string) func(*toolCall, map[string]any) {
	return func(c *toolCall, out map[string]any) {
		if n, ok := out[ours]; ok {
			out[theirs] = n
		}
		out["truncated"] = out["truncated"] == true
	}
}

// bashMeta: output (the command's output: the result without its last
// "Exit code: N" line), exit (the exit code; null when unknown, as for a
// killed command) and description.
func bashMeta(c *toolCall, out map[string]any) {
	text := c.output
	if i := strings.LastIndex(text, "\nExit code: "); i >= 0 && !strings.Contains(text[i+1:], "\n") {
		text = strings.TrimSuffix(text[:i], "\n")
	} else if strings.HasPrefix(text, "Exit code: ") && !strings.Contains(text, "\n") {
		text = ""
	}
	out["output"] = text
	out["exit"] = nil
	if n, ok := number(out["exit_code"]); ok && n >= 0 {
		out["exit"] = out["exit_code"]
	}
	if d, ok := c.input["description"]; ok {
		out["description"] = d
	}
}

// todoMeta: todos, the list as OpenCode's Todo items.
func todoMeta(c *toolCall, out map[string]any) {
	out["todos"] = todosOf(c.input["todos"])
}

// todosOf reads a todos input ([{content, status, priority?}]).
func todosOf(v any) []wire.Todo {
	items, _ := v.([]any)
	out := make([]wire.Todo, 0, len(items))
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		t := wire.Todo{Content: strOf(m["content"]), Status: strOf(m["status"]), Priority: strOf(m["priority"])}
		if t.Priority == "" {
			t.Priority = "medium"
		}
		out = append(out, t)
	}
	return out
}

// number reads a JSON number of the tool's metadata (an int live, a
// float64 or json.Number once stored).
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// strOf is v when it is a string, else "".
func strOf(v any) string {
	s, _ := v.(string)
	return s
}

// asTask presents a delegation made by a tool other than task (a worker's
// ask_<worker>, a team member's spawn) as OpenCode's task tool, the one
// tool whose part the TUI links to its child session (metadata.sessionId):
// input {description, prompt, subagent_type}, the title kept.
func asTask(v toolView, name string, raw json.RawMessage) toolView {
	in := decodeObject(raw)
	str := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := in[k].(string); ok && s != "" {
				return s
			}
		}
		return ""
	}
	agent := str("subagent_type", "agent_or_team", "agent_or_team_name", "agent_name")
	if agent == "" {
		agent = strings.TrimPrefix(name, "ask_")
	}
	desc := str("description")
	if desc == "" {
		desc = v.title
	}
	if desc == "" {
		desc = "Ask " + agent
	}
	b, err := json.Marshal(map[string]string{"description": desc, "prompt": str("prompt", "message"), "subagent_type": agent})
	if err != nil {
		return v
	}
	v.tool, v.input = "task", b
	if v.title == "" {
		v.title = desc
	}
	return v
}
