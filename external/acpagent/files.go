package acpagent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// fsCalls numbers the file operations agents ask for, for the hooks'
// call ids.
var fsCalls atomic.Int64

// maxReadBytes bounds a file fs/read_text_file returns.
const maxReadBytes = 16 << 20

// readFile serves fs/read_text_file as our Read tool: the call goes
// through tools/pre-execute (hooks, the member's tool_approval, the
// approval flow), then the Read tool, confined to the member's
// workspace, reads the file (which is what lets a later write replace
// it: read before write); the agent gets the file's text itself, from
// line Line for Limit lines.
func (t *turn) readFile(ctx context.Context, req acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	in := map[string]any{"file_path": req.Path}
	if req.Line != nil {
		in["offset"] = *req.Line
	}
	if req.Limit != nil {
		in["limit"] = *req.Limit
	}
	ctx, cancel := t.opContext(ctx)
	defer cancel()
	if _, err := t.runFileTool(ctx, "Read", in); err != nil {
		return acp.ReadTextFileResponse{}, err
	}
	abs, err := t.n.ws.Resolve(req.Path)
	if err != nil {
		return acp.ReadTextFileResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	root, err := t.n.ws.Open()
	if err != nil {
		return acp.ReadTextFileResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	defer root.Close()
	f, err := root.OpenFile(abs, os.O_RDONLY, 0)
	if err != nil {
		return acp.ReadTextFileResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	defer f.Close()
	text, err := lines(f, req.Line, req.Limit)
	if err != nil {
		return acp.ReadTextFileResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	return acp.ReadTextFileResponse{Content: text}, nil
}

// writeFile serves fs/write_text_file with our Write tool, through
// tools/pre-execute: hooks, the member's tool_approval and the approval
// flow decide, the workspace confines the path, and a file that exists
// must have been read first (fs/read_text_file) and be unchanged since,
// unless the write is an edit the agent was granted (takeApproved). Such
// a write is not asked about again (agent.ToolInfo.Granted: the person
// approved that very change already, in the agent's own permission
// request), though hooks still see it; and, unless a hook changed it,
// the file as it is now counts as read by the session just before the
// Write runs, so a change made by anyone else between the check and the
// write still fails it.
func (t *turn) writeFile(ctx context.Context, req acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	ctx, cancel := t.opContext(ctx)
	defer cancel()
	in := map[string]any{"file_path": req.Path, "content": req.Content}
	granted := ""
	if abs, err := t.n.ws.Resolve(req.Path); err == nil && t.takeApproved(abs, req.Content) {
		granted = "the edit " + t.n.cfg.Name + " asked permission for, allowed"
	}
	call, info, err := t.prepareFileTool(ctx, "Write", in, granted)
	if err != nil {
		return acp.WriteTextFileResponse{}, err
	}
	if granted != "" && sameWrite(call.Args, req) {
		t.markRead(ctx, req.Path)
	}
	_, err = t.runPrepared(ctx, call, info)
	return acp.WriteTextFileResponse{}, err
}

// sameWrite says whether args (the Write's input after tools/pre-execute)
// still write req's content to req's path: a hook that changed either
// makes it another write than the one granted.
func sameWrite(args []byte, req acp.WriteTextFileRequest) bool {
	var in struct {
		Path    string `json:"file_path"`
		Content string `json:"content"`
	}
	return json.Unmarshal(args, &in) == nil && in.Path == req.Path && in.Content == req.Content
}

// markRead records path as read by the child session, as it is now, by
// running the Read tool (bookkeeping, not the agent's call: no hooks). A
// failure leaves the Write to refuse with its own reason.
func (t *turn) markRead(ctx context.Context, path string) {
	if tl, ok := t.n.fileTool("Read"); ok {
		args, _ := json.Marshal(map[string]any{"file_path": path})
		tool.Run(ctx, tl, tool.Call{ID: "acpfs_" + strconv.FormatInt(fsCalls.Add(1), 10), Name: "Read", Args: args, SessionID: t.inv.Session.ID})
	}
}

// opContext is the context of a file operation: the request's, with the
// child's invocation (for the hooks), ended too when the run is.
func (t *turn) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(spawn.WithInvocation(ctx, t.inv))
	stop := context.AfterFunc(t.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// runFileTool runs one of the member's file tools as the agent's call:
// tools/pre-execute, the tool, tools/post-execute. A denial or an error
// result is an error for the agent, with the reason.
func (t *turn) runFileTool(ctx context.Context, name string, in map[string]any) (tool.Result, error) {
	call, info, err := t.prepareFileTool(ctx, name, in, "")
	if err != nil {
		return tool.Result{}, err
	}
	return t.runPrepared(ctx, call, info)
}

// prepareFileTool is the first half of runFileTool: the call, through
// tools/pre-execute (which may change its input); granted is
// agent.ToolInfo.Granted.
func (t *turn) prepareFileTool(ctx context.Context, name string, in map[string]any, granted string) (tool.Call, agent.ToolInfo, error) {
	args, _ := json.Marshal(in)
	// MessageID: a write is captured for the prompt the agent answers, so
	// that a rewind of the member's session to it finds it.
	call := tool.Call{ID: "acpfs_" + strconv.FormatInt(fsCalls.Add(1), 10), Name: name, Args: args, SessionID: t.inv.Session.ID, MessageID: t.cp.message()}
	info := agent.ToolInfo{Agent: t.n.cfg.Name, SessionID: t.inv.Session.ID, ToolName: name, CallID: call.ID, Input: slices.Clone(args), Granted: granted}
	if _, ok := t.n.fileTool(name); !ok {
		return call, info, acp.NewInternalError(map[string]any{"error": "no tool " + name})
	}
	if hooks, _ := t.inv.Runtime.Lifecycle().(agent.Hooks); hooks != nil {
		d := hooks.PreTool(ctx, info)
		if !d.Allows() {
			return call, info, acp.NewInternalError(map[string]any{"error": fmt.Sprintf("%s %s denied: %s", name, in["file_path"], d.Reason)})
		}
		if len(d.UpdatedInput) > 0 && json.Valid(d.UpdatedInput) {
			call.Args = slices.Clone(d.UpdatedInput)
			info.Input = slices.Clone(d.UpdatedInput)
		}
	}
	return call, info, nil
}

// runPrepared is the second half: the tool, then tools/post-execute.
func (t *turn) runPrepared(ctx context.Context, call tool.Call, info agent.ToolInfo) (tool.Result, error) {
	tl, _ := t.n.fileTool(call.Name)
	hooks, _ := t.inv.Runtime.Lifecycle().(agent.Hooks)
	res := tool.Run(ctx, tl, call)
	if hooks != nil {
		res = hooks.PostTool(ctx, info, res)
	}
	if res.IsError {
		return res, acp.NewInternalError(map[string]any{"error": res.Content})
	}
	return res, nil
}

// lines reads the text of f from 1-based line from (nil: 1) for limit
// lines (nil: all), at most maxReadBytes.
func lines(f *os.File, from, limit *int) (string, error) {
	start, n := 1, -1
	if from != nil && *from > 1 {
		start = *from
	}
	if limit != nil {
		n = max(*limit, 0)
	}
	r := bufio.NewReader(f)
	var b strings.Builder
	for line := 1; n != 0; line++ {
		s, err := r.ReadString('\n')
		if line >= start && s != "" {
			if b.Len()+len(s) > maxReadBytes {
				return "", fmt.Errorf("the file is larger than %d MB", maxReadBytes>>20)
			}
			b.WriteString(s)
			if n > 0 {
				n--
			}
		}
		if err != nil { // io.EOF, or a read error: what was read is the text
			break
		}
	}
	return b.String(), nil
}
