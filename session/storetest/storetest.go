package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// Run runs the conformance suite. open must return a new, empty store; the
// suite closes it at the end of each subtest. caps declares where the store
// differs from the others: the cases it enables run, the others are
// skipped with the reason.
func Run(t *testing.T, caps Capabilities, open func(t *testing.T) session.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, st session.Store)
	}{
		{"CreateGet", testCreateGet},
		{"CreateExists", testCreateExists},
		{"CreateMissingParent", testCreateMissingParent},
		{"SessionOwnParent", testSessionOwnParent},
		{"NotFound", testNotFound},
		{"Update", testUpdate},
		{"MetadataCopyIsolation", testMetadataIsolation},
		{"List", testList},
		{"ListThread", testListThread},
		{"DeleteSubtree", testDeleteSubtree},
		{"Messages", testMessages},
		{"MessageCopyIsolation", testMessageIsolation},
		{"EventsRoundTrip", testEventsRoundTrip},
		{"EventsOrdering", testEventsOrdering},
		{"ReadYourWrites", testReadYourWrites},
		{"ConcurrentWriters", testConcurrentWriters},
		{"Subtree", testSubtree},
		{"ClaimRelease", testClaimRelease},
		{"ClaimLineage", testClaimLineage},
		{"ClaimNewSession", testClaimNewSession},
		{"ClaimConcurrent", testClaimConcurrent},
		{"Closed", testClosed},
		{"LostWrites", testLostWrites},
		{"WritesAfterLoss", testWritesAfterLoss},
		{"Captures", testCaptures},
		{"CapturesDeleted", testCapturesDeleted},
		{"TruncateMessages", testTruncateMessages},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := open(t)
			defer func() {
				if err := st.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			tc.fn(t, st)
		})
	}
	for _, tc := range capCases {
		t.Run(tc.name, func(t *testing.T) {
			if why := tc.skip(caps); why != "" {
				t.Skip(why)
			}
			st := open(t)
			defer func() {
				if err := st.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			tc.fn(t, caps, st)
		})
	}
}

var base = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)

// newSession builds a session record; created orders sessions in time.
func newSession(id, parent string, depth int, created time.Time) session.Session {
	return session.Session{
		ID: id, ParentID: parent, Depth: depth, AgentName: "agent-" + id, SourceType: event.SourceAgent,
		Title: "title of " + id, Status: session.StatusRunning, CreatedAt: created, UpdatedAt: created,
	}
}

func mustCreate(t *testing.T, st session.Store, s session.Session) {
	t.Helper()
	if err := st.CreateSession(context.Background(), s); err != nil {
		t.Fatalf("CreateSession(%s): %v", s.ID, err)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sameSession(t *testing.T, got, want session.Session) {
	t.Helper()
	if !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("%s: CreatedAt = %v, want %v", want.ID, got.CreatedAt, want.CreatedAt)
	}
	if !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("%s: UpdatedAt = %v, want %v", want.ID, got.UpdatedAt, want.UpdatedAt)
	}
	got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	// Metadata is compared through JSON: a store may give numbers back as
	// float64.
	if g, w := jsonOf(t, got.Metadata), jsonOf(t, want.Metadata); g != w {
		t.Errorf("%s: Metadata = %s, want %s", want.ID, g, w)
	}
	got.Metadata, want.Metadata = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("session differs:\n got %+v\nwant %+v", got, want)
	}
}

func testClosed(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	if err := st.AppendEvents(ctx, "ses_1", event.PartEnd{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	checks := map[string]error{}
	checks["CreateSession"] = st.CreateSession(ctx, newSession("ses_2", "", 0, base))
	_, checks["GetSession"] = st.GetSession(ctx, "ses_1")
	checks["UpdateSession"] = st.UpdateSession(ctx, "ses_1", func(*session.Session) {})
	_, checks["ListSessions"] = st.ListSessions(ctx, session.ListOptions{})
	checks["DeleteSession"] = st.DeleteSession(ctx, "ses_1")
	checks["AppendMessages"] = st.AppendMessages(ctx, "ses_1", session.Message{Message: model.UserText("x")})
	_, checks["Messages"] = st.Messages(ctx, "ses_1")
	checks["AppendEvents"] = st.AppendEvents(ctx, "ses_1", event.PartEnd{})
	_, checks["Events"] = st.Events(ctx, "ses_1", 0)
	checks["Flush"] = st.Flush(ctx)
	checks["Claim"] = st.Claim(ctx, "ses_1")
	checks["Release"] = st.Release(ctx, "ses_1")
	for name, err := range checks {
		if !errors.Is(err, session.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	// Close is idempotent (Run closes again).
}
