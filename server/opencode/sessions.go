package opencode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/server/httpsec"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/session"
)

// defaultTitlePrefix starts the title of a session created without one;
// its first prompt then titles it (as OpenCode does).
const defaultTitlePrefix = "New session - "

// wireSession turns a stored (or projected) session into OpenCode's shape.
// cost and tokens are the session's subtree totals once known, else its
// own. It takes no lock.
func (s *base) wireSession(rec session.Session) wire.Session {
	dir := s.dirOf(rec)
	title := rec.Title
	if st := s.facts.get(rec.ID); st != nil {
		if t := st.title.Load(); t != nil {
			title = *t
		}
	}
	usage, cost := rec.TotalUsage, rec.TotalCost
	if usage.IsZero() {
		usage = rec.Usage
	}
	if cost == 0 {
		cost = rec.Cost
	}
	out := wire.Session{
		ID: rec.ID, Slug: slug(rec.ID), ProjectID: projectID(dir), Directory: dir, ParentID: rec.ParentID,
		Title: title, Version: s.opts.Version, Agent: rec.AgentName,
		Time: wire.SessionTime{Created: ms(rec.CreatedAt), Updated: ms(rec.UpdatedAt)},
		Cost: cost, Tokens: tokens(usage.InputTokens, usage.OutputTokens, usage.ReasoningTokens, usage.CacheReadTokens, usage.CacheWriteTokens),
	}
	if rec.AgentName != "" {
		m := s.modelOf(rec.AgentName)
		out.Model = &wire.SessionModel{ID: m.ModelID, ProviderID: m.ProviderID}
	}
	if out.Time.Updated < out.Time.Created {
		out.Time.Updated = out.Time.Created
	}
	out.Revert = revertOf(rec)
	out.Metadata = recordMeta(rec)
	return out
}

// slug is a short stable name derived from a session id.
func slug(sid string) string {
	r := strings.TrimPrefix(sid, id.Session+"_")
	if len(r) > 8 {
		r = r[len(r)-8:]
	}
	return strings.ToLower(r)
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func tokens(in, out, reasoning, read, write int64) wire.Tokens {
	return wire.Tokens{Input: in, Output: out, Reasoning: reasoning, Cache: wire.TokensCache{Read: read, Write: write}}
}

// wireSessions converts sessions.
func (s *base) wireSessions(recs []session.Session) []wire.Session {
	out := make([]wire.Session, 0, len(recs))
	for _, r := range recs {
		out = append(out, s.wireSession(r))
	}
	return out
}

// readBody decodes a JSON body into v. An empty body is {} when
// emptyOK. It answers 400 (413 for a body too large, 408 for one that did
// not arrive in time) and returns false when the body is not acceptable.
func (s *base) readBody(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) bool {
	b, ok := s.bodyBytes(w, r)
	return ok && decodeBody(w, b, v, emptyOK)
}

// bodyBytes reads r's body. It answers 413 for a body too large, 408 for
// one that did not arrive in time, 400 for another failure, and returns
// false then. A body of known length is read into a buffer of its size
// (io.ReadAll would grow one to up to twice that).
func (s *base) bodyBytes(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= s.opts.MaxBodyBytes {
		buf.Grow(int(n) + bytes.MinRead) // ReadFrom wants MinRead free to see the end
	}
	_, err := buf.ReadFrom(r.Body)
	if err == nil {
		return buf.Bytes(), true
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		bodyTooLarge(w, mbe.Limit)
	case httpsec.BodyTimedOut(err):
		writeJSON(w, http.StatusRequestTimeout, wire.BadRequestError{Name: "BadRequest", Data: wire.BadRequestData{
			Message: fmt.Sprintf("request body not received within %s", s.opts.BodyTimeout), Kind: "Body"}})
	default:
		badRequest(w, "Body", "read body: %v", err)
	}
	return nil, false
}

// bodyTooLarge answers 413 for a body over limit bytes.
func bodyTooLarge(w http.ResponseWriter, limit int64) {
	writeJSON(w, http.StatusRequestEntityTooLarge, wire.BadRequestError{Name: "BadRequest", Data: wire.BadRequestData{
		Message: fmt.Sprintf("request body larger than %d bytes", limit), Kind: "Body"}})
}

// decodeBody decodes the JSON body b into v, as readBody.
func decodeBody(w http.ResponseWriter, b []byte, v any, emptyOK bool) bool {
	if len(bytes.TrimSpace(b)) == 0 {
		if emptyOK {
			return true
		}
		badRequest(w, "Body", "request body is empty; expected a JSON object")
		return false
	}
	if err := json.Unmarshal(b, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				badRequest(w, "Body", "request body: expected a JSON object, got JSON %s", te.Value)
			} else {
				badRequest(w, "Body", "field %s: expected %s, got JSON %s", te.Field, jsonKind(te.Type), te.Value)
			}
			return false
		}
		badRequest(w, "Body", "malformed JSON body: %v", err)
		return false
	}
	return true
}

// sessionsAPI serves the session routes: create, get, list, children,
// update, delete, status and diff.
type sessionsAPI struct {
	*base
}

func (s *sessionsAPI) handleCreateSession(w http.ResponseWriter, r *http.Request) {
	var body wire.CreateSessionBody
	if !s.readBody(w, r, &body, true) {
		return
	}
	ctx := r.Context()
	now := time.Now()
	rec := session.Session{
		ID: id.Descending(id.Session), Title: body.Title, Status: session.StatusIdle, CreatedAt: now, UpdatedAt: now,
		AgentName: s.pool.DefaultNode(),
	}
	if body.Agent != "" {
		n, ok := s.pool.Node(body.Agent)
		if !ok {
			badRequest(w, "Body", "unknown agent %q; available: %s", body.Agent, strings.Join(s.pool.NodeNames(), ", "))
			return
		}
		rec.AgentName = n.Name()
	}
	if n, ok := s.pool.Node(rec.AgentName); ok {
		rec.SourceType = n.SourceType()
	}
	dir := requestDir(r)
	if body.ParentID != "" {
		if !strings.HasPrefix(body.ParentID, id.Session) {
			badRequest(w, "Body", "parentID must be a session id (ses...), got %q", body.ParentID)
			return
		}
		parent, err := s.store.GetSession(ctx, body.ParentID)
		if err != nil {
			storeError(w, body.ParentID, err)
			return
		}
		rec.ParentID, rec.Depth = parent.ID, parent.Depth+1
		if dir == "" {
			dir = s.dirOf(parent)
		}
	}
	if dir == "" {
		dir = s.dir
	}
	rec.Metadata = map[string]any{MetadataDirectory: dir}
	for k, v := range body.Metadata {
		if k != MetadataDirectory {
			rec.Metadata[k] = v
		}
	}
	if rec.Title == "" {
		rec.Title = defaultTitlePrefix + now.UTC().Format(time.RFC3339Nano)
	}
	if err := s.store.CreateSession(ctx, rec); err != nil {
		storeError(w, rec.ParentID, err)
		return
	}
	st := s.facts.ensure(rec.ID)
	st.mu.Lock()
	st.dir.Store(&dir)
	s.facts.touch(st, true)
	info := s.wireSession(rec)
	s.publish("session.created", rec.ID, sessionInfoProps{SessionID: rec.ID, Info: info})
	st.mu.Unlock()
	writeJSON(w, http.StatusOK, info)
}

func (s *sessionsAPI) handleGetSession(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("sessionID")
	rec, err := s.store.GetSession(r.Context(), sid)
	if err != nil {
		storeError(w, sid, err)
		return
	}
	writeJSON(w, http.StatusOK, s.wireSession(rec))
}

// handleListSessions answers GET /session: newest first; ?roots=true only
// root sessions; ?limit=N at most N; ?directory= only that directory's;
// ?search= titles containing the text; ?start= updated at or after.
func (s *sessionsAPI) handleListSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	roots := false
	if v := q.Get("roots"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			badRequest(w, "Query", "roots must be true or false, got %q", v)
			return
		}
		roots = b
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			badRequest(w, "Query", "limit must be a non-negative number, got %q", v)
			return
		}
		limit = int(f)
	}
	var start int64
	if v := q.Get("start"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			badRequest(w, "Query", "start must be a number (Unix milliseconds), got %q", v)
			return
		}
		start = int64(f)
	}
	search := strings.ToLower(q.Get("search"))
	dir := requestDir(r)
	recs, err := s.store.ListSessions(r.Context(), session.ListOptions{RootsOnly: roots})
	if err != nil {
		internalError(w, err)
		return
	}
	all := s.wireSessions(recs)
	out := make([]wire.Session, 0, len(all))
	for _, ss := range all {
		if dir != "" && ss.Directory != dir {
			continue
		}
		if search != "" && !strings.Contains(strings.ToLower(ss.Title), search) {
			continue
		}
		if start > 0 && ss.Time.Updated < start {
			continue
		}
		out = append(out, ss)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// handleChildren answers GET /session/{id}/children, oldest first.
func (s *sessionsAPI) handleChildren(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("sessionID")
	if _, err := s.store.GetSession(r.Context(), sid); err != nil {
		storeError(w, sid, err)
		return
	}
	kids, err := s.store.ListSessions(r.Context(), session.ListOptions{ParentID: sid})
	if err != nil {
		internalError(w, err)
		return
	}
	slices.Reverse(kids)
	writeJSON(w, http.StatusOK, s.wireSessions(kids))
}

func (s *sessionsAPI) handleUpdateSession(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("sessionID")
	ctx := r.Context()
	if _, err := s.store.GetSession(ctx, sid); err != nil {
		storeError(w, sid, err)
		return
	}
	var body wire.UpdateSessionBody
	if !s.readBody(w, r, &body, true) {
		return
	}
	err := s.store.UpdateSession(ctx, sid, func(rec *session.Session) {
		if body.Title != nil {
			rec.Title = *body.Title
		}
		if len(body.Metadata) > 0 {
			if rec.Metadata == nil {
				rec.Metadata = map[string]any{}
			}
			for k, v := range body.Metadata {
				if k != MetadataDirectory {
					rec.Metadata[k] = v
				}
			}
		}
		rec.UpdatedAt = time.Now()
	})
	if err != nil {
		storeError(w, sid, err)
		return
	}
	rec, err := s.store.GetSession(ctx, sid)
	if err != nil {
		storeError(w, sid, err)
		return
	}
	st := s.facts.ensure(sid)
	st.mu.Lock()
	if body.Title != nil {
		st.title.Store(body.Title)
	}
	info := s.wireSession(rec)
	s.publish("session.updated", sid, sessionInfoProps{SessionID: sid, Info: info})
	st.mu.Unlock()
	writeJSON(w, http.StatusOK, info)
}

// handleDeleteSession deletes a session with its subtree: a run in
// progress in it is aborted first; session.deleted is published for every
// deleted session, children first.
func (s *sessionsAPI) handleDeleteSession(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("sessionID")
	ctx := r.Context()
	tree, err := session.Subtree(ctx, s.store, sid)
	if err != nil {
		storeError(w, sid, err)
		return
	}
	for _, rec := range tree {
		s.prompts.abort(ctx, rec.ID)
	}
	if err := s.store.DeleteSession(ctx, sid); err != nil {
		storeError(w, sid, err)
		return
	}
	for i := len(tree) - 1; i >= 0; i-- {
		rec := tree[i]
		st := s.facts.ensure(rec.ID)
		st.mu.Lock()
		info := s.wireSession(rec)
		s.publish("session.deleted", rec.ID, sessionInfoProps{SessionID: rec.ID, Info: info})
		st.busy.Store(false)
		if q := st.runs; q != nil {
			q.cancel(errAborted)
			st.runs = nil
		}
		st.mu.Unlock()
		s.facts.drop(rec.ID)
	}
	writeJSON(w, http.StatusOK, true)
}

// handleStatus answers GET /session/status: the running sessions (of the
// request's directory, when it names one) as {id: {type: busy}}.
func (s *sessionsAPI) handleStatus(w http.ResponseWriter, r *http.Request) {
	dir := requestDir(r)
	out := map[string]wire.SessionStatus{}
	s.facts.each(func(sid string, st *sessState) {
		if st.busy.Load() && (dir == "" || s.dirOfID(sid) == dir) {
			out[sid] = wire.SessionStatus{Type: "busy"}
		}
	})
	writeJSON(w, http.StatusOK, out)
}

// jsonKind names the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Interface:
		return "a value"
	}
	return "a number"
}
