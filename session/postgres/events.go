// Event logs and conversations: appends and reads.

package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// appendReq is one AppendEvents call waiting for its commit.
type appendReq struct {
	sid   string
	at    int64
	kinds []string
	datas []string
	done  chan error
}

// appender commits the appends of this store's goroutines. Appends
// serialize on the event_counter row (see commit), so a commit per call
// would make concurrent appenders queue for one another's commits; instead
// the first caller to find no commit under way commits everything queued
// meanwhile in one transaction (group commit), and every caller gets its
// own result.
type appender struct {
	mu      sync.Mutex
	queue   []*appendReq
	writing bool
}

func (a *appender) init() {}

// AppendEvents implements session.Store. It returns once the events are
// committed (with their seq and GlobalSeq) and their notice sent.
func (s *Store) AppendEvents(ctx context.Context, sessionID string, evs ...event.Event) (err error) {
	defer s.account(ctx, len(evs), &err)
	if err := session.CheckWrite(ctx, len(evs)); err != nil {
		return err
	}
	if s.isClosed() {
		return session.ErrClosed
	}
	r := &appendReq{sid: sessionID, at: time.Now().UnixNano(), kinds: make([]string, len(evs)), datas: make([]string, len(evs)), done: make(chan error, 1)}
	for i, e := range evs {
		b, err := event.Marshal(e)
		if err != nil {
			return fmt.Errorf("postgres: session %s: %w", sessionID, err)
		}
		r.kinds[i], r.datas[i] = string(e.Kind()), string(b)
	}
	if len(evs) == 0 {
		ok, err := s.exists(ctx, sessionID)
		if err == nil && !ok {
			err = notFound(sessionID)
		}
		return err
	}
	a := &s.appends
	a.mu.Lock()
	a.queue = append(a.queue, r)
	if a.writing {
		a.mu.Unlock()
		return <-r.done // the committing caller commits it
	}
	a.writing = true
	for len(a.queue) > 0 {
		batch := a.queue
		a.queue = nil
		a.mu.Unlock()
		// The batch carries other callers' events: the caller's ctx
		// ending must not cancel them.
		s.commit(context.WithoutCancel(ctx), batch)
		a.mu.Lock()
	}
	a.writing = false
	a.mu.Unlock()
	return <-r.done
}

// commit writes a batch of appends with one call of the append_events
// function (migrations/0001_init.sql), one round trip that commits, and
// answers each. The function locks the event_counter row until the
// commit: appends from every process on the database commit one at a
// time, in the order of the GlobalSeq they were given, so a reader that
// saw GlobalSeq n has seen every event numbered below n. An append to a
// session that does not exist (any more) fails with ErrNotFound, alone (a
// session is deleted under the same lock, so it cannot vanish in
// between). The NOTIFY of each session, payload "GSEQ SESSION_ID", goes
// out on commit.
func (s *Store) commit(ctx context.Context, batch []*appendReq) {
	var ids, kinds, datas []string
	var times []int64
	for _, r := range batch {
		for range r.kinds {
			ids, times = append(ids, r.sid), append(times, r.at)
		}
		kinds, datas = append(kinds, r.kinds...), append(datas, r.datas...)
	}
	rows, err := s.pool.Query(ctx, `SELECT * FROM append_events($1::text[], $2::bigint[], $3::text[], $4::text[], $5)`,
		ids, times, kinds, datas, s.channel)
	var missing []string
	if err == nil {
		missing, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		err = s.wrap(err)
		for _, r := range batch {
			r.done <- err
		}
		return
	}
	now := time.Now().UnixNano()
	for _, r := range batch {
		if slices.Contains(missing, r.sid) {
			r.done <- notFound(r.sid)
			continue
		}
		if s.commitLatency != nil {
			s.commitLatency(time.Duration(now - r.at))
		}
		r.done <- nil
	}
}

// Events implements session.Store.
func (s *Store) Events(ctx context.Context, sessionID string, afterSeq int64) ([]session.Record, error) {
	if s.isClosed() {
		return nil, session.ErrClosed
	}
	// The LEFT JOIN answers "no events after afterSeq" (one row without
	// an event) apart from "no such session" (no row) in one round trip:
	// a durable session's end reads its log this way before writing, once
	// per session.
	rows, err := s.pool.Query(ctx, `SELECT s.id, e.gseq, e.seq, e.time, e.data::text FROM sessions s
		LEFT JOIN events e ON e.session_pk = s.pk AND e.seq > $2
		WHERE s.id = $1 ORDER BY e.seq`, sessionID, afterSeq)
	if err != nil {
		return nil, s.wrap(err)
	}
	out, found, err := recordsOrNone(s, rows)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, notFound(sessionID)
	}
	return out, nil
}

var _ session.ManyEventsReader = (*Store)(nil)

// EventsOfMany implements session.ManyEventsReader: one statement, whose
// snapshot has every event committed before one it has (events commit in
// GlobalSeq order, under event_counter's row lock).
func (s *Store) EventsOfMany(ctx context.Context, after map[string]int64) ([]session.Record, error) {
	if s.isClosed() {
		return nil, session.ErrClosed
	}
	if len(after) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(after))
	seqs := make([]int64, 0, len(after))
	for id, seq := range after {
		ids, seqs = append(ids, id), append(seqs, seq)
	}
	// Each session's events past its own seq through (session_pk, seq):
	// joined directly, the planner bounds the index scan by session_pk
	// only and filters seq after, reading a session's whole log at every
	// read (a 10,000-member team's root, 30,000 events, at every poll of
	// its follower: 3.7 ms against 0.2). OFFSET 0 keeps the subquery from
	// being flattened into that join.
	rows, err := s.pool.Query(ctx, `SELECT s.id, e.gseq, e.seq, e.time, e.data::text
		FROM unnest($1::text[], $2::bigint[]) AS w(id, after)
		JOIN sessions s ON s.id = w.id
		CROSS JOIN LATERAL (SELECT gseq, seq, time, data FROM events
			WHERE session_pk = s.pk AND seq > w.after OFFSET 0) e
		ORDER BY e.gseq`, ids, seqs)
	if err != nil {
		return nil, s.wrap(err)
	}
	return s.records(rows)
}

// records reads event rows (session id, gseq, seq, time, data) and
// closes them.
func (s *Store) records(rows pgx.Rows) ([]session.Record, error) {
	out, _, err := recordsOrNone(s, rows)
	return out, err
}

// recordsOrNone is records for rows of an outer join, where a row without
// an event (NULL gseq) stands for a session that has none: found says
// whether any row came. A function, not a method, as missingIfEmpty.
func recordsOrNone(s *Store, rows pgx.Rows) (out []session.Record, found bool, err error) {
	defer rows.Close()
	for rows.Next() {
		found = true
		var (
			r    session.Record
			gseq *int64
			seq  *int64
			t    *int64
			data *string
		)
		if err := rows.Scan(&r.SessionID, &gseq, &seq, &t, &data); err != nil {
			return nil, found, s.wrap(err)
		}
		if gseq == nil {
			continue
		}
		r.GlobalSeq, r.Seq, r.Time = *gseq, *seq, fromUnixNano(*t)
		if r.Event, err = event.Decode([]byte(*data)); err != nil {
			return nil, found, fmt.Errorf("session %s event %d: %w", r.SessionID, r.Seq, err)
		}
		out = append(out, r)
	}
	return out, found, s.wrap(rows.Err())
}

// missingIfEmpty tells an empty read of a session's rows (n of them) from
// a read of a session that does not exist: ErrNotFound for the latter. A
// function, not a method: Store's methods may not grow in number
// (tests/floors), and EventsOfMany is one.
func missingIfEmpty(ctx context.Context, s *Store, sessionID string, n int) error {
	if n > 0 {
		return nil
	}
	if ok, err := s.exists(ctx, sessionID); err != nil {
		return err
	} else if !ok {
		return notFound(sessionID)
	}
	return nil
}

// AppendMessages implements session.Store: one transaction, committed
// before it returns.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs ...session.Message) (err error) {
	defer s.account(ctx, len(msgs), &err)
	if err := session.CheckWrite(ctx, len(msgs)); err != nil {
		return err
	}
	if s.isClosed() {
		return session.ErrClosed
	}
	var (
		ids, agents, roles, parts []string
		synth                     []bool
		created                   []int64
	)
	for _, m := range msgs {
		p := m.Parts
		if p == nil {
			p = []model.Part{}
		}
		b, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("postgres: session %s: message %s: %w", sessionID, m.ID, err)
		}
		ids, agents, roles, parts = append(ids, m.ID), append(agents, m.AgentName), append(roles, string(m.Role)), append(parts, string(b))
		synth, created = append(synth, m.Synthetic), append(created, unixNano(m.CreatedAt))
	}
	if len(msgs) == 0 {
		return missingIfEmpty(ctx, s, sessionID, 0)
	}
	// One statement finds the session and inserts (a round trip per
	// message write, two per durable turn, saved); no row inserted means
	// no session. WITH ORDINALITY keeps the messages in order (pk follows
	// it).
	tag, err := s.pool.Exec(ctx, `INSERT INTO messages (id, session_pk, agent_name, role, synthetic, created_at, parts)
		SELECT i, s.pk, a, r, y, c, p::json FROM sessions s,
			unnest($2::text[], $3::text[], $4::text[], $5::bool[], $6::bigint[], $7::text[]) WITH ORDINALITY AS v(i, a, r, y, c, p, o)
		WHERE s.id = $1 ORDER BY o`,
		sessionID, ids, agents, roles, synth, created, parts)
	if pgCode(err) == codeForeignKeyViolation || err == nil && tag.RowsAffected() == 0 {
		return notFound(sessionID) // none, or deleted meanwhile
	}
	return s.wrap(err)
}

// Messages implements session.Store.
func (s *Store) Messages(ctx context.Context, sessionID string) ([]session.Message, error) {
	if s.isClosed() {
		return nil, session.ErrClosed
	}
	rows, err := s.pool.Query(ctx, `SELECT m.id, m.agent_name, m.role, m.synthetic, m.created_at, m.parts::text
		FROM sessions s JOIN messages m ON m.session_pk = s.pk WHERE s.id = $1 ORDER BY m.pk`, sessionID)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []session.Message
	for rows.Next() {
		var (
			m           = session.Message{SessionID: sessionID}
			role, parts string
			created     int64
		)
		if err := rows.Scan(&m.ID, &m.AgentName, &role, &m.Synthetic, &created, &parts); err != nil {
			return nil, s.wrap(err)
		}
		m.Role, m.CreatedAt = model.Role(role), fromUnixNano(created)
		if err := json.Unmarshal([]byte(parts), &m.Parts); err != nil {
			return nil, fmt.Errorf("session %s message %s: parts: %w", sessionID, m.ID, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err)
	}
	return out, missingIfEmpty(ctx, s, sessionID, len(out))
}

// EventsAfter returns up to limit events of every session with GlobalSeq
// > afterGlobalSeq, in GlobalSeq order (limit <= 0: no limit). Since
// GlobalSeq is also the commit order, a follower that reads again from
// the last GlobalSeq it saw never misses an event committed later.
func (s *Store) EventsAfter(ctx context.Context, afterGlobalSeq int64, limit int) ([]session.Record, error) {
	if s.isClosed() {
		return nil, session.ErrClosed
	}
	q := `SELECT s.id, e.gseq, e.seq, e.time, e.data::text FROM events e JOIN sessions s ON s.pk = e.session_pk
		WHERE e.gseq > $1 ORDER BY e.gseq`
	args := []any{afterGlobalSeq}
	if limit > 0 {
		q += ` LIMIT $2`
		args = append(args, limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.wrap(err)
	}
	return s.records(rows)
}
