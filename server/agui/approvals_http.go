package agui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"github.com/agentpool/agentpool/server/httpsec"
)

// maxReplyBytes bounds the body of POST /approvals/{id}: a reply and a
// message for the model.
const maxReplyBytes = 64 << 10

// handleApprovals answers GET /approvals: {"approvals": [Approval]}, the
// pending requests oldest first; ?threadId= keeps those a run of that
// thread showed. Without a broker the list is empty.
func (s *Server) handleApprovals(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Approvals []wire.Approval `json:"approvals"`
	}{Approvals: []wire.Approval{}}
	if s.approvals != nil {
		out.Approvals = s.approvals.list(r.Context(), r.URL.Query().Get("threadId"))
	}
	writeJSON(w, http.StatusOK, out)
}

// replyBody is the body of POST /approvals/{id}.
type replyBody struct {
	Reply   approval.Reply
	Message string
}

// handleReply answers POST /approvals/{id} with {"reply", "message"?}:
// 200 {"id", "reply"} when the answer was taken, 400 {"error", "field"}
// for a body that is not exactly that, 404 for no such request, 409 when
// it was answered already (first answer wins) or withdrawn.
func (s *Server) handleReply(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		if ct == "" {
			ct = "none"
		}
		writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type must be application/json, got %s", ct))
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReplyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", mbe.Limit))
		case httpsec.BodyTimedOut(err):
			writeError(w, http.StatusRequestTimeout, fmt.Sprintf("request body not received within %s", s.opts.BodyTimeout))
		default:
			writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		}
		return
	}
	body, field, err := parseReply(raw)
	if err != nil {
		e := map[string]string{"error": err.Error()}
		if field != "" {
			e["field"] = field
		}
		writeJSON(w, http.StatusBadRequest, e)
		return
	}
	if s.approvals == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no pending approval %q: this server asks no one (no approval broker)", id))
		return
	}
	err = s.approvals.broker.Reply(id, body.Reply, body.Message, frontEnd)
	switch {
	case errors.Is(err, approval.ErrUnknown):
		writeError(w, http.StatusNotFound, fmt.Sprintf("no pending approval %q (GET /approvals lists them)", id))
	case errors.Is(err, approval.ErrAnswered):
		writeError(w, http.StatusConflict, fmt.Sprintf("approval %q: %s; the first answer stands", id, strings.TrimPrefix(err.Error(), "approval: ")))
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]string{"id": id, "reply": string(body.Reply)})
	}
}

// parseReply reads {"reply": "allow_once" | "allow_always" | "reject_once"
// | "reject_always", "message"?: string} and nothing else; on error it
// names the field at fault ("" for the body as a whole).
func parseReply(raw []byte) (replyBody, string, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return replyBody{}, "", fmt.Errorf(`the body must be a JSON object {"reply": %s, "message"?: string}`, strings.Join(approvalOptions, " | "))
	}
	if dec.More() {
		return replyBody{}, "", errors.New("the body holds more than one JSON value")
	}
	var out replyBody
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		v := fields[k]
		switch k {
		case "reply":
			var rs string
			if json.Unmarshal(v, &rs) != nil {
				return replyBody{}, k, fmt.Errorf("reply must be a string: one of %s", strings.Join(approvalOptions, ", "))
			}
			out.Reply = approval.Reply(rs)
		case "message":
			if json.Unmarshal(v, &out.Message) != nil {
				return replyBody{}, k, errors.New("message must be a string")
			}
		default:
			return replyBody{}, k, fmt.Errorf("unknown field %q (the body is {reply, message?})", k)
		}
	}
	if _, ok := fields["reply"]; !ok {
		return replyBody{}, "reply", fmt.Errorf("reply is required: one of %s", strings.Join(approvalOptions, ", "))
	}
	switch out.Reply {
	case approval.AllowOnce, approval.AllowAlways, approval.RejectOnce, approval.RejectAlways:
		return out, "", nil
	}
	return replyBody{}, "reply", fmt.Errorf("reply %q is not one of %s", out.Reply, strings.Join(approvalOptions, ", "))
}
