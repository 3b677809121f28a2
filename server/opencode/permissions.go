package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/session"
)

// permissionsAPI is the OpenCode front end of the approval broker
// (Options.Approvals): it is attached to the broker for the server's
// life, publishes permission.asked and permission.replied on the session
// where the tool runs, lists the pending requests (GET /permission) and
// takes the user's replies (POST /permission/{requestID}/reply and the
// deprecated POST /session/{sessionID}/permissions/{permissionID}).
type permissionsAPI struct {
	*base
	broker *approval.Broker // nil: no approvals (every list is empty)

	mu      sync.Mutex
	shownOn map[string]string // pending request id -> the session its events are published on
}

// frontEnd is how the broker names this server's answers.
const frontEnd = "opencode"

// ClientHeader names the client that sends a request, when it is one of
// knownClients: an answer to a permission request is then labelled with
// it instead of frontEnd (the web view, served by this server, sends
// "web"), so that the record says where the person answered.
const ClientHeader = "X-Agentpool-Client"

// knownClients are the values of ClientHeader that label answers; any
// other value (or none) is frontEnd's. A fixed set, so that a client
// cannot pass for a broker's own labels (rule, timeout, ...).
var knownClients = map[string]bool{"web": true}

// answeredBy is the label of an answer sent with r.
func answeredBy(r *http.Request) string {
	if c := r.Header.Get(ClientHeader); knownClients[c] {
		return c
	}
	return frontEnd
}

// onNotice maps a broker notice to its bus event. It runs on the
// broker's delivery (never under the broker's lock) and takes one
// session's lock at a time, like every other writer of session events.
//
// permission.asked is preceded by session.updated of the session it is
// shown on: the OpenCode TUI adds a session to its list on session.updated
// only (not session.created), and shows a root's prompt for the requests
// of the sessions it has listed, so a child still running, which has had
// no session.updated yet, would otherwise ask unseen.
func (s *permissionsAPI) onNotice(n approval.Notice) {
	rid := n.Request.ID
	switch n.Kind {
	case approval.Asked:
		w, shown := s.wireRequest(n.Request)
		s.mu.Lock()
		s.shownOn[rid] = w.SessionID
		s.mu.Unlock()
		st := s.facts.ensure(w.SessionID)
		st.mu.Lock()
		defer st.mu.Unlock()
		if shown != nil {
			s.publish("session.updated", shown.ID, sessionInfoProps{SessionID: shown.ID, Info: s.wireSession(*shown)})
		}
		s.publish("permission.asked", w.SessionID, w)
	case approval.Replied, approval.Cancelled:
		s.mu.Lock()
		sid, ok := s.shownOn[rid]
		delete(s.shownOn, rid)
		s.mu.Unlock()
		if !ok {
			sid = n.Request.SessionID
		}
		st := s.facts.ensure(sid)
		st.mu.Lock()
		defer st.mu.Unlock()
		s.publish("permission.replied", sid, wire.PermissionReplied{SessionID: sid, RequestID: rid, Reply: wireReply(n)})
	}
}

// shownOnSession is the session that a request of session sid is
// published on, with its record (nil when the store does not have it). The 1.18.33 TUI shows, in a root's view, the requests of the root
// and of its children, and none in any other view; so a request of a
// grandchild or deeper is shown on its ancestor that is a root's child
// (metadata.sessionID names the session the tool runs in). A root and
// its children are shown on themselves.
func (s *permissionsAPI) shownOnSession(sid string) *session.Session {
	ctx := context.Background()
	rec, err := s.store.GetSession(ctx, sid)
	if err != nil {
		return nil
	}
	for range maxShownDepth {
		if rec.ParentID == "" {
			break
		}
		parent, err := s.store.GetSession(ctx, rec.ParentID)
		if err != nil || parent.ParentID == "" {
			break
		}
		rec = parent
	}
	s.dirOf(rec)
	return &rec
}

// maxShownDepth bounds the walk up a session's ancestors.
const maxShownDepth = 64

// wireRequest is req as OpenCode's PermissionRequest, on the session it
// is shown on (shownOnSession), and that session's record.
func (s *permissionsAPI) wireRequest(req approval.Request) (wire.PermissionRequest, *session.Session) {
	st := s.facts.ensure(req.SessionID)
	st.mu.Lock()
	w := s.wireRequestLocked(st, req)
	st.mu.Unlock()
	shown := s.shownOnSession(req.SessionID)
	if shown != nil && shown.ID != req.SessionID {
		w.SessionID = shown.ID
		w.Metadata["sessionID"] = req.SessionID
	}
	return w, shown
}

// wireReply is OpenCode's name of how a request ended (a withdrawn one
// counts as rejected: the TUI drops its prompt).
func wireReply(n approval.Notice) string {
	if n.Kind != approval.Replied {
		return "reject"
	}
	switch n.Answer.Reply {
	case approval.AllowOnce:
		return "once"
	case approval.AllowAlways:
		return "always"
	}
	return "reject"
}

// wireRequestLocked is a request as OpenCode's PermissionRequest: the
// permission OpenCode's own tool asks for (edit for Write and Edit, bash,
// read, ...), the patterns it names (the file, the command), metadata its
// prompt renders (the file and a diff for edit, the command for bash), and
// the tool part (message and call) when the session's transcript has it.
// st.mu is held.
func (s *permissionsAPI) wireRequestLocked(st *sessState, req approval.Request) wire.PermissionRequest {
	in := decodeObject(req.Input)
	if in == nil {
		in = map[string]any{}
	}
	out := wire.PermissionRequest{ID: req.ID, SessionID: req.SessionID, Permission: req.Tool,
		Patterns: []string{"*"}, Always: []string{"*"}, Metadata: map[string]any{}}
	str := func(k string) string { return strOf(in[k]) }
	switch req.Tool {
	case "Write", "Edit":
		out.Permission = "edit"
		abs := s.absPath(str("file_path"))
		out.Patterns = []string{relPath(s.root, abs)}
		out.Metadata["filepath"] = abs
		if d := s.editDiff(req.Tool, abs, in); d != "" {
			out.Metadata["diff"] = d
		}
	case "Read":
		out.Permission = "read"
		abs := s.absPath(str("file_path"))
		out.Patterns = []string{relPath(s.root, abs)}
		out.Metadata["filepath"] = abs
	case "Bash":
		out.Permission = "bash"
		out.Patterns = []string{str("command")}
		out.Metadata["command"] = str("command")
		if d := str("description"); d != "" {
			out.Metadata["description"] = d
		}
	case "Glob", "Grep":
		out.Permission = strings.ToLower(req.Tool)
		out.Patterns = []string{str("pattern")}
		out.Metadata["pattern"] = str("pattern")
		if p := str("path"); p != "" {
			out.Metadata["path"] = p
		}
	case "LS":
		out.Permission = "list"
		out.Patterns = []string{relPath(s.root, s.absPath(str("path")))}
		out.Metadata["path"] = str("path")
	case "WebFetch":
		out.Permission = "webfetch"
		out.Patterns = []string{str("url")}
		out.Metadata["url"] = str("url")
	case "task":
		out.Permission = "task"
		out.Patterns = []string{str("agent_or_team")}
		out.Metadata["subagent_type"] = str("agent_or_team")
		out.Metadata["description"] = str("description")
	default:
		out.Metadata["input"] = in
	}
	out.Metadata["agent"] = req.Agent
	out.Metadata["title"] = req.Title
	if req.Rule != "" {
		out.Metadata["reason"] = req.Rule
	}
	if req.CallID != "" {
		if t := st.trans; t != nil {
			for _, p := range t.parts {
				if tp, ok := p.cur.(*wire.ToolPart); ok && tp.CallID == req.CallID {
					out.Tool = &wire.PermissionTool{MessageID: tp.MessageID, CallID: tp.CallID}
					break
				}
			}
		}
	}
	return out
}

// absPath resolves a tool's path against the workspace (the server's
// directory when the pool has none).
func (s *permissionsAPI) absPath(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	root := s.root
	if root == "" {
		root = s.dir
	}
	return filepath.Join(root, p)
}

// editDiff is the unified diff a Write or Edit would make, for the prompt;
// "" when the file lies outside the workspace or is too large to show.
func (s *permissionsAPI) editDiff(tool, abs string, in map[string]any) string {
	root := s.root
	if root == "" {
		root = s.dir
	}
	if abs == "" || relPath(root, abs) == abs {
		return "" // outside the workspace: nothing is read
	}
	var before string
	if fi, err := os.Stat(abs); err == nil {
		if !fi.Mode().IsRegular() || fi.Size() > maxDiffText {
			return ""
		}
		b, err := os.ReadFile(abs)
		if err != nil {
			return ""
		}
		before = string(b)
	}
	after := strOf(in["content"])
	if tool == "Edit" {
		old, repl := strOf(in["old_string"]), strOf(in["new_string"])
		if old == "" || !strings.Contains(before, old) {
			return ""
		}
		if all, _ := in["replace_all"].(bool); all {
			after = strings.ReplaceAll(before, old, repl)
		} else {
			after = strings.Replace(before, old, repl, 1)
		}
	}
	patch, _, _ := unifiedDiff(relPath(root, abs), before, after)
	return patch
}

// handleList answers GET /permission: the pending requests of the
// request's directory (every directory without one), oldest first.
func (s *permissionsAPI) handleList(w http.ResponseWriter, r *http.Request) {
	out := []wire.PermissionRequest{}
	if s.broker != nil {
		dir := requestDir(r)
		for _, req := range s.broker.Pending() {
			if dir != "" && s.dirOfID(req.SessionID) != dir {
				continue
			}
			w, _ := s.wireRequest(req)
			out = append(out, w)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// handleReply answers POST /permission/{requestID}/reply {reply, message?}.
func (s *permissionsAPI) handleReply(w http.ResponseWriter, r *http.Request) {
	rid := r.PathValue("requestID")
	var body wire.PermissionReplyBody
	if !s.readStrict(w, r, &body, "reply") {
		return
	}
	s.reply(w, rid, "", body.Reply, body.Message, answeredBy(r))
}

// handleRespond answers the deprecated POST
// /session/{sessionID}/permissions/{permissionID} {response}.
func (s *permissionsAPI) handleRespond(w http.ResponseWriter, r *http.Request) {
	sid, rid := r.PathValue("sessionID"), r.PathValue("permissionID")
	if _, err := s.store.GetSession(r.Context(), sid); err != nil {
		storeError(w, sid, err)
		return
	}
	var body wire.PermissionRespondBody
	if !s.readStrict(w, r, &body, "response") {
		return
	}
	s.reply(w, rid, sid, body.Response, "", answeredBy(r))
}

// reply hands the user's answer to the broker: 200 true, or 404
// PermissionNotFoundError when the request is not pending (never asked,
// answered already, withdrawn) or not of session sid.
func (s *permissionsAPI) reply(w http.ResponseWriter, rid, sid, reply, message, by string) {
	var r approval.Reply
	switch reply {
	case "once":
		r = approval.AllowOnce
	case "always":
		r = approval.AllowAlways
	case "reject":
		r = approval.RejectOnce
	}
	notFound := func(msg string) {
		writeJSON(w, http.StatusNotFound, wire.PermissionNotFoundError{Tag: "PermissionNotFoundError", RequestID: rid, Message: msg})
	}
	if s.broker == nil {
		notFound("no permission request " + rid + ": this server decides no approvals")
		return
	}
	if sid != "" {
		s.mu.Lock()
		shown := s.shownOn[rid]
		s.mu.Unlock()
		if req, ok := s.broker.Lookup(rid); ok && req.SessionID != sid && shown != sid {
			notFound(fmt.Sprintf("permission request %s belongs to session %s, not %s", rid, req.SessionID, sid))
			return
		}
	}
	if err := s.broker.Reply(rid, r, message, by); err != nil {
		switch {
		case errors.Is(err, approval.ErrAnswered):
			notFound(fmt.Sprintf("permission request %s is no longer pending: %v", rid, err))
		case errors.Is(err, approval.ErrUnknown):
			notFound("no pending permission request " + rid)
		default:
			writeJSON(w, http.StatusBadRequest, wire.InvalidRequestError{Tag: "InvalidRequestError", Message: err.Error(), Kind: "Body"})
		}
		return
	}
	writeRaw(w, http.StatusOK, []byte("true"))
}

// readStrict decodes a reply body as the OpenAPI has it: a JSON object
// with no other fields, whose field (reply or response) is once, always
// or reject. It answers 400 InvalidRequestError (413, 408 as every body)
// and returns false when the body is not acceptable.
func (s *permissionsAPI) readStrict(w http.ResponseWriter, r *http.Request, v any, field string) bool {
	b, ok := s.bodyBytes(w, r)
	if !ok {
		return false
	}
	invalid := func(f, format string, args ...any) bool {
		writeJSON(w, http.StatusBadRequest, wire.InvalidRequestError{Tag: "InvalidRequestError", Message: fmt.Sprintf(format, args...), Kind: "Body", Field: f})
		return false
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalid("", "request body: %v; expected {%q: \"once\" | \"always\" | \"reject\"}", err, field)
	}
	if dec.More() {
		return invalid("", "request body: more than one JSON value")
	}
	var got string
	switch x := v.(type) {
	case *wire.PermissionReplyBody:
		got = x.Reply
	case *wire.PermissionRespondBody:
		got = x.Response
	}
	switch got {
	case "once", "always", "reject":
		return true
	case "":
		return invalid(field, "field %s is required: once, always or reject", field)
	}
	return invalid(field, "field %s must be once, always or reject, not %q", field, got)
}
