// Prepared statements of the writer.

package sqlite

import (
	"context"
	"database/sql"
	"strings"
)

// multiRow are the row counts of the prepared multi-row event inserts,
// largest first; 1 is always there.
var multiRow = []int{128, 16, 1}

type statements struct {
	insEvents                   map[int]*sql.Stmt
	maxSeq, insMessage, insPart *sql.Stmt
}

type txStatements struct {
	insEvents                   map[int]*sql.Stmt
	maxSeq, insMessage, insPart *sql.Stmt
}

func prepare(ctx context.Context, db *sql.DB) (*statements, error) {
	st := &statements{insEvents: map[int]*sql.Stmt{}}
	var err error
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var p *sql.Stmt
		p, err = db.PrepareContext(ctx, q)
		return p
	}
	for _, n := range multiRow {
		values := strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?), ", n), ", ")
		st.insEvents[n] = prep(`INSERT INTO events (session_pk, seq, time, kind, data) VALUES ` + values)
	}
	st.maxSeq = prep(`SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_pk = ?`)
	st.insMessage = prep(`INSERT INTO messages (id, session_pk, agent_name, role, synthetic, created_at) VALUES (?, ?, ?, ?, ?, ?)`)
	st.insPart = prep(`INSERT INTO parts (message_seq, idx, kind, text, tool_call_id, tool_name, args, is_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

func (st *statements) in(tx *sql.Tx) *txStatements {
	out := &txStatements{insEvents: make(map[int]*sql.Stmt, len(st.insEvents)),
		maxSeq: tx.Stmt(st.maxSeq), insMessage: tx.Stmt(st.insMessage), insPart: tx.Stmt(st.insPart)}
	for n, p := range st.insEvents {
		out.insEvents[n] = tx.Stmt(p)
	}
	return out
}

func (st *statements) close() {
	all := []*sql.Stmt{st.maxSeq, st.insMessage, st.insPart}
	for _, p := range st.insEvents {
		all = append(all, p)
	}
	for _, p := range all {
		if p != nil {
			p.Close()
		}
	}
}
