package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// captureStore is st as a session.CaptureStore, or the test is skipped.
func captureStore(t *testing.T, st session.Store) session.CaptureStore {
	t.Helper()
	cs, ok := st.(session.CaptureStore)
	if !ok {
		t.Skipf("%T does not implement session.CaptureStore", st)
	}
	return cs
}

// binary is content that a text column would not keep byte for byte.
var binary = []byte("a\x00b\r\n\xff\xfe\x80 end")

func capture(sid, msg, path string, content []byte) session.Capture {
	return session.Capture{SessionID: sid, MessageID: msg, ToolCallID: "call_" + msg, Root: "/ws", Path: path,
		Exists: content != nil, Mode: 0o640, Content: content, CreatedAt: base}
}

// The first capture of a file at a checkpoint is kept byte for byte, later
// ones at the same checkpoint are not; captures come back in the order
// they were stored, a missing file as absent.
func testCaptures(t *testing.T, st session.Store) {
	cs := captureStore(t, st)
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	mustCreate(t, st, newSession("ses_2", "", 0, base))
	puts := []struct {
		c    session.Capture
		want bool
	}{
		{capture("ses_1", "msg_1", "a.txt", binary), true},
		{capture("ses_1", "msg_1", "a.txt", []byte("changed since")), false}, // same checkpoint: the first wins
		{capture("ses_1", "msg_1", "new.txt", nil), true},
		{capture("ses_1", "msg_2", "a.txt", []byte("second")), true},
		{capture("ses_2", "msg_9", "a.txt", binary), true}, // the same content in another session
		{capture("ses_1", "", "b.txt", []byte{}), true},    // by tool call; an empty file exists
	}
	puts[5].c.ToolCallID = "call_x"
	for i, p := range puts {
		got, err := cs.PutCapture(ctx, p.c)
		if err != nil || got != p.want {
			t.Fatalf("PutCapture #%d = %v, %v; want %v", i, got, err, p.want)
		}
	}
	if ok, err := cs.HasCapture(ctx, "ses_1", "msg_1", "/ws", "a.txt"); err != nil || !ok {
		t.Fatalf("HasCapture of a stored capture = %v, %v", ok, err)
	}
	if ok, err := cs.HasCapture(ctx, "ses_1", "msg_3", "/ws", "a.txt"); err != nil || ok {
		t.Fatalf("HasCapture of another checkpoint = %v, %v", ok, err)
	}
	if ok, err := cs.HasCapture(ctx, "ses_1", "call:call_x", "/ws", "b.txt"); err != nil || !ok {
		t.Fatalf("HasCapture by tool call = %v, %v", ok, err)
	}
	got, err := cs.Captures(ctx, "ses_1")
	if err != nil {
		t.Fatal(err)
	}
	want := []session.Capture{puts[0].c, puts[2].c, puts[3].c, puts[5].c}
	if len(got) != len(want) {
		t.Fatalf("%d captures, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.SessionID != w.SessionID || g.MessageID != w.MessageID || g.ToolCallID != w.ToolCallID || g.Root != w.Root ||
			g.Path != w.Path || g.Exists != w.Exists || !bytes.Equal(g.Content, w.Content) {
			t.Errorf("capture %d = %+v (%q), want %+v (%q)", i, g, g.Content, w, w.Content)
		}
		if w.Exists && g.Mode != w.Mode {
			t.Errorf("capture %d: mode %o, want %o", i, g.Mode, w.Mode)
		}
		if i > 0 && g.Seq <= got[i-1].Seq {
			t.Errorf("capture %d: seq %d after %d", i, g.Seq, got[i-1].Seq)
		}
	}
	if other, err := cs.Captures(ctx, "ses_2"); err != nil || len(other) != 1 || !bytes.Equal(other[0].Content, binary) {
		t.Fatalf("captures of ses_2 = %+v, %v", other, err)
	}
	if _, err := cs.PutCapture(ctx, capture("ses_none", "m", "a", nil)); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("PutCapture in a missing session = %v, want ErrNotFound", err)
	}
	if _, err := cs.Captures(ctx, "ses_none"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Captures of a missing session = %v, want ErrNotFound", err)
	}
	big := capture("ses_1", "msg_big", "big", make([]byte, session.MaxCaptureBytes+1))
	if _, err := cs.PutCapture(ctx, big); !errors.Is(err, session.ErrCaptureTooLarge) {
		t.Fatalf("PutCapture over the bound = %v, want ErrCaptureTooLarge", err)
	}
}

// Captures go with their session: deleting a tree deletes its captures,
// and the content another session holds stays.
func testCapturesDeleted(t *testing.T, st session.Store) {
	cs := captureStore(t, st)
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	mustCreate(t, st, newSession("ses_2", "ses_1", 1, base))
	mustCreate(t, st, newSession("ses_3", "", 0, base))
	for _, c := range []session.Capture{capture("ses_2", "m1", "a", binary), capture("ses_3", "m1", "a", binary)} {
		if _, err := cs.PutCapture(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.DeleteSession(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Captures(ctx, "ses_2"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Captures of a deleted child = %v, want ErrNotFound", err)
	}
	got, err := cs.Captures(ctx, "ses_3")
	if err != nil || len(got) != 1 || !bytes.Equal(got[0].Content, binary) {
		t.Fatalf("captures of the other session = %+v, %v", got, err)
	}
}

// TruncateMessages removes a message and those after it, nothing else.
func testTruncateMessages(t *testing.T, st session.Store) {
	cs := captureStore(t, st)
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	mustCreate(t, st, newSession("ses_2", "", 0, base))
	var msgs []session.Message
	for _, id := range []string{"msg_1", "msg_2", "msg_3", "msg_4"} {
		msgs = append(msgs, session.Message{ID: id, CreatedAt: base, Message: model.UserText(id)})
	}
	if err := st.AppendMessages(ctx, "ses_1", msgs...); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendMessages(ctx, "ses_2", msgs[:2]...); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.TruncateMessages(ctx, "ses_1", "msg_9"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("TruncateMessages from an unknown message = %v, want ErrNotFound", err)
	}
	if _, err := cs.TruncateMessages(ctx, "ses_1", "msg_2"); err != nil {
		t.Fatal(err)
	}
	n, err := cs.TruncateMessages(ctx, "ses_1", "msg_2")
	if !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("TruncateMessages from a removed message = %d, %v; want ErrNotFound", n, err)
	}
	got, err := st.Messages(ctx, "ses_1")
	if err != nil || len(got) != 1 || got[0].ID != "msg_1" {
		t.Fatalf("messages after truncation = %+v, %v", got, err)
	}
	if other, err := st.Messages(ctx, "ses_2"); err != nil || len(other) != 2 {
		t.Fatalf("the other session's messages = %+v, %v", other, err)
	}
	more := session.Message{ID: "msg_5", CreatedAt: base, Message: model.UserText("after")}
	if err := st.AppendMessages(ctx, "ses_1", more); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Messages(ctx, "ses_1"); err != nil || len(got) != 2 || got[1].ID != "msg_5" || got[1].Text() != "after" {
		t.Fatalf("messages appended after a truncation = %+v, %v", got, err)
	}
}

// A capture one store made another store on the same data reads.
func testSharedCaptures(t *testing.T, caps Capabilities, st session.Store) {
	cs := captureStore(t, st)
	ctx := context.Background()
	other := openShared(t, caps, st)
	ocs := captureStore(t, other)
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	if _, err := cs.PutCapture(ctx, capture("ses_1", "m1", "a", binary)); err != nil {
		t.Fatal(err)
	}
	if stored, err := ocs.PutCapture(ctx, capture("ses_1", "m1", "a", []byte("later"))); err != nil || stored {
		t.Fatalf("the other store took a second capture of the checkpoint: %v, %v", stored, err)
	}
	got, err := ocs.Captures(ctx, "ses_1")
	if err != nil || len(got) != 1 || !bytes.Equal(got[0].Content, binary) {
		t.Fatalf("the other store reads %+v, %v", got, err)
	}
}
