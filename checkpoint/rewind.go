package checkpoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// Result says what a rewind did.
type Result struct {
	Session string `json:"session"`
	To      string `json:"to"`
	Mode    Mode   `json:"mode"`
	// Fork is the session that keeps the conversation as it was before
	// the rewind cut it ("" when the conversation was not cut).
	Fork string `json:"fork,omitempty"`
	// Removed is the number of messages cut from the conversation.
	Removed int `json:"removed_messages"`
	// Files are the files restored, in root and path order.
	Files []File `json:"files"`
	// PutBack is the number of messages an Undo put back.
	PutBack int `json:"put_back_messages,omitempty"`

	undo string // the key of the captures of the files as they were before it
}

// File is one file a rewind restored (or could not).
type File struct {
	Root string `json:"root"`
	Path string `json:"path"`
	// Action is "restored" (written back as it was) or "removed" (it did
	// not exist at the checkpoint).
	Action string `json:"action"`
	// Session is the session whose capture it came from (a descendant's,
	// for a file a spawned session changed).
	Session string `json:"session"`
	Err     string `json:"error,omitempty"`
}

// ErrRestore is the error of a rewind that could not restore every file
// (Result.Files says which).
var ErrRestore = errors.New("some files could not be restored")

// Rewind takes sessionID back to just before its message toMessage:
// with Code or Both, every file changed from that message on (by the
// session or by the sessions its calls from that message on spawned, their
// descendants included) is restored to its content before that message;
// with Conversation or Both, the conversation is cut back to the messages
// before it, after the whole conversation was copied into a fork
// (Result.Fork) that keeps the original reachable. The session must not
// be running.
func Rewind(ctx context.Context, st session.Store, sessionID, toMessage string, mode Mode) (Result, error) {
	res := Result{Session: sessionID, To: toMessage, Mode: mode, Files: []File{}}
	switch mode {
	case Code, Conversation, Both:
	default:
		return res, fmt.Errorf("rewind mode %q: want code, conversation or both", mode)
	}
	cs, err := captures(st)
	if err != nil {
		return res, err
	}
	release, err := claim(ctx, st, sessionID)
	if err != nil {
		return res, err
	}
	err = rewind(ctx, st, cs, &res)
	return res, errors.Join(err, release())
}

func rewind(ctx context.Context, st session.Store, cs session.CaptureStore, res *Result) error {
	msgs, err := st.Messages(ctx, res.Session)
	if err != nil {
		return err
	}
	from, err := messageIndex(msgs, res.Session, res.To)
	if err != nil {
		return err
	}
	var restoreErr error
	if res.Mode != Conversation {
		// The background shells of the line still running: what they
		// changed so far is undone too.
		if err := finishLine(ctx, st, res.Session); err != nil {
			return err
		}
		caps, err := capturesFrom(ctx, st, cs, res.Session, msgs, from)
		if err != nil {
			return err
		}
		undo := "rewind_" + strconv.FormatInt(time.Now().UnixNano(), 36)
		res.Files = restoreAll(caps, func(r *os.Root, c session.Capture) error {
			return keepCurrent(ctx, cs, r, c, res.Session, undo)
		})
		res.undo = undo
		for _, f := range res.Files {
			if f.Err != "" {
				restoreErr = ErrRestore
			}
		}
	}
	if res.Mode != Code {
		f, err := fork(ctx, st, cs, res.Session, "", "rewind")
		if err != nil {
			return err
		}
		res.Fork = f.ID
		if res.Removed, err = cs.TruncateMessages(ctx, res.Session, res.To); err != nil {
			return err
		}
	}
	entry := map[string]any{"to": res.To, "mode": string(res.Mode), "at": time.Now().UTC().Format(time.RFC3339)}
	if res.undo != "" {
		entry["undo"] = res.undo
	}
	if res.Fork != "" {
		entry["fork"] = res.Fork
		entry["kept"], entry["total"] = from, len(msgs)
	}
	err = st.UpdateSession(ctx, res.Session, func(s *session.Session) {
		if s.Metadata == nil {
			s.Metadata = map[string]any{}
		}
		list, _ := s.Metadata[MetaRewind].([]any)
		s.Metadata[MetaRewind] = append(slices.Clone(list), entry)
		s.UpdatedAt = time.Now()
	})
	return errors.Join(restoreErr, err, st.Flush(ctx))
}

// capturesFrom returns, for each file changed from message msgs[from] of
// sid on, its first such capture: the file as it was before that message.
func capturesFrom(ctx context.Context, st session.Store, cs session.CaptureStore, sid string, msgs []session.Message, from int) ([]session.Capture, error) {
	pos := make(map[string]int, len(msgs))
	for i, m := range msgs {
		pos[m.ID] = i
		for _, p := range m.Parts {
			if p.ToolCallID != "" {
				if _, seen := pos["call:"+p.ToolCallID]; !seen {
					pos["call:"+p.ToolCallID] = i
				}
			}
		}
	}
	after := func(key string) bool {
		i, ok := pos[key]
		return ok && i >= from // a message cut by an earlier rewind is not in the line any more
	}
	own, err := cs.Captures(ctx, sid)
	if err != nil {
		return nil, err
	}
	var picked []session.Capture
	for _, c := range own {
		if after(c.Checkpoint()) || (c.MessageID == "" && after("call:"+c.ToolCallID)) {
			picked = append(picked, c)
		}
	}
	// The sessions spawned by the calls from that message on: all that
	// they and their descendants changed.
	recs, err := st.Events(ctx, sid, 0)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		sp, ok := r.Event.(event.SpawnSessionStart)
		if !ok || sp.ToolCallID == "" || !after("call:"+sp.ToolCallID) {
			continue
		}
		tree, err := session.Subtree(ctx, st, sp.ChildSessionID)
		if errors.Is(err, session.ErrNotFound) {
			continue // deleted since
		}
		if err != nil {
			return nil, err
		}
		for _, s := range tree {
			cc, err := cs.Captures(ctx, s.ID)
			if err != nil {
				return nil, err
			}
			picked = append(picked, cc...)
		}
	}
	// The first capture of each file is its content before all of them.
	slices.SortStableFunc(picked, func(a, b session.Capture) int { return cmp.Compare(a.Seq, b.Seq) })
	seen := map[[2]string]bool{}
	out := picked[:0]
	for _, c := range picked {
		k := [2]string{c.Root, c.Path}
		if !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// restoreAll puts every captured file back, each workspace through an
// os.Root of its own (a path cannot lead out of it), after keep (when not
// nil) kept it as it is: a file that cannot be kept is not restored.
func restoreAll(caps []session.Capture, keep func(*os.Root, session.Capture) error) []File {
	slices.SortFunc(caps, func(a, b session.Capture) int {
		return strings.Compare(a.Root+"\x00"+a.Path, b.Root+"\x00"+b.Path)
	})
	out := make([]File, 0, len(caps))
	roots := map[string]*os.Root{}
	defer func() {
		for _, r := range roots {
			r.Close()
		}
	}()
	for _, c := range caps {
		f := File{Root: c.Root, Path: c.Path, Action: "restored", Session: c.SessionID}
		if !c.Exists {
			f.Action = "removed"
		}
		r, ok := roots[c.Root]
		var err error
		if !ok {
			if r, err = os.OpenRoot(c.Root); err == nil {
				roots[c.Root] = r
			}
		}
		if err == nil && !c.Exists && absent(r, c.Path) {
			// Made and gone again since (a command's temporary file, as
			// sed -i's beside the file it edits, seen by a scan while it
			// ran): there is nothing to undo, and nothing to report.
			continue
		}
		if err == nil && keep != nil {
			err = keep(r, c)
		}
		if err == nil {
			err = restore(r, c)
		}
		if err != nil {
			f.Err = err.Error()
		} else {
			touchedAll(c.Root, c.Path) // not a background shell's change
		}
		out = append(out, f)
	}
	return out
}

// absent reports whether path does not exist under root (an error that
// says something else is not absence: the restore then reports it).
func absent(root *os.Root, path string) bool {
	name := filepath.FromSlash(path)
	if !filepath.IsLocal(name) {
		return false
	}
	_, err := root.Lstat(name)
	return errors.Is(err, fs.ErrNotExist)
}

// restore writes c back through root: its bytes and mode bits into a
// temporary file beside it, then renamed over it; or removes it.
func restore(root *os.Root, c session.Capture) error {
	name := filepath.FromSlash(c.Path)
	if !filepath.IsLocal(name) {
		return fmt.Errorf("path %q is not inside the workspace", c.Path)
	}
	if !c.Exists {
		err := root.Remove(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	dir := filepath.Dir(name)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp := filepath.Join(dir, "."+filepath.Base(name)+".rewind-"+strconv.FormatUint(rand.Uint64(), 36))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	mode := fs.FileMode(c.Mode).Perm()
	if mode == 0 {
		mode = 0o644
	}
	_, err = f.Write(c.Content)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}

// keepCurrent captures the file of c as it is now, before a rewind
// overwrites it, in session sid under the rewind's key (Undo's input).
func keepCurrent(ctx context.Context, cs session.CaptureStore, r *os.Root, c session.Capture, sid, key string) error {
	name := filepath.FromSlash(c.Path)
	now := session.Capture{SessionID: sid, ToolCallID: key, Root: c.Root, Path: c.Path}
	info, err := r.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case !info.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file now (%v): not overwritten", c.Path, info.Mode().Type())
	case info.Size() > session.MaxCaptureBytes:
		return fmt.Errorf("%s is too large to keep before overwriting it (%d bytes)", c.Path, info.Size())
	default:
		f, err := r.Open(name)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(f, session.MaxCaptureBytes+1))
		f.Close()
		if err != nil {
			return err
		}
		now.Exists, now.Mode, now.Content = true, uint32(info.Mode().Perm()), b
	}
	_, err = cs.PutCapture(ctx, now)
	return err
}
