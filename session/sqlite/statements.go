// Prepared statements: every statement of the hot paths (the writer's,
// and the point reads) is parsed once per connection. Parsing a statement
// cost more than running it: before, a third of a delegated call's CPU time
// went to sqlite3_prepare.

package sqlite

import (
	"context"
	"database/sql"
	"strings"
)

// multiRow are the row counts of the prepared multi-row event inserts,
// largest first; 1 is always there.
var multiRow = []int{128, 64, 32, 16, 8, 4, 2, 1}

type statements struct {
	insEvents, insMessages, insParts map[int]*sql.Stmt
	maxSeq                           *sql.Stmt

	// Sessions.
	getSession, sessionPK, insSession, updSession, delSession *sql.Stmt
	// Claims.
	lineage, ownClaim, insClaim, delClaim *sql.Stmt
	// PRAGMA data_version (cache.go).
	dataVersion *sql.Stmt
}

const (
	qGetSession = `SELECT ` + sessionColumns + ` FROM sessions WHERE id = ?`
	qSessionPK  = `SELECT pk FROM sessions WHERE id = ?`
	qInsSession = `INSERT INTO sessions (` + sessionColumns + `, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qUpdSession = `UPDATE sessions SET depth = ?, agent_name = ?, source_type = ?, title = ?, status = ?, stop_reason = ?,
			updated_at = ?, usage = ?, cost = ?, total_usage = ?, total_cost = ?, duration_ms = ?, metadata = ?, owner = ?
			WHERE id = ?`
	qDelSession = `DELETE FROM sessions WHERE id = ?`
	qInsClaim   = `INSERT INTO claims (session_id, instance, claimed_at) VALUES (?, ?, ?)
		ON CONFLICT (session_id) DO UPDATE SET instance = excluded.instance, claimed_at = excluded.claimed_at`
	qDelClaim = `DELETE FROM claims WHERE session_id = ? AND instance = ?`
)

func prepare(ctx context.Context, db *sql.DB) (*statements, error) {
	st := &statements{insEvents: map[int]*sql.Stmt{}, insMessages: map[int]*sql.Stmt{}, insParts: map[int]*sql.Stmt{}}
	var err error
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var p *sql.Stmt
		p, err = db.PrepareContext(ctx, q)
		return p
	}
	values := func(cols, n int) string {
		row := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + "), "
		return strings.TrimSuffix(strings.Repeat(row, n), ", ")
	}
	for _, n := range multiRow {
		st.insEvents[n] = prep(`INSERT INTO events (session_pk, seq, time, kind, data) VALUES ` + values(5, n))
		st.insMessages[n] = prep(`INSERT INTO messages (id, session_pk, agent_name, role, synthetic, created_at) VALUES ` + values(6, n))
		st.insParts[n] = prep(`INSERT INTO parts (message_seq, idx, kind, text, tool_call_id, tool_name, args, is_error) VALUES ` + values(8, n))
	}
	st.maxSeq = prep(`SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_pk = ?`)
	st.getSession = prep(qGetSession)
	st.sessionPK = prep(qSessionPK)
	st.insSession = prep(qInsSession)
	st.updSession = prep(qUpdSession)
	st.delSession = prep(qDelSession)
	st.lineage = prep(lineageClaims)
	st.ownClaim = prep(ownClaim)
	st.insClaim = prep(qInsClaim)
	st.delClaim = prep(qDelClaim)
	st.dataVersion = prep(`PRAGMA data_version`)
	if err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

// txStatements binds the store's statements to one transaction, each on
// first use (most transactions use two or three of them).
type txStatements struct {
	*statements
	ctx   context.Context
	tx    *sql.Tx
	bound map[*sql.Stmt]*sql.Stmt
}

func (st *statements) in(ctx context.Context, tx *sql.Tx) *txStatements {
	return &txStatements{statements: st, ctx: ctx, tx: tx}
}

// get returns p bound to the transaction.
func (t *txStatements) get(p *sql.Stmt) *sql.Stmt {
	if b, ok := t.bound[p]; ok {
		return b
	}
	if t.bound == nil {
		t.bound = make(map[*sql.Stmt]*sql.Stmt, 4)
	}
	b := t.tx.StmtContext(t.ctx, p)
	t.bound[p] = b
	return b
}

func (st *statements) close() {
	all := []*sql.Stmt{st.maxSeq, st.getSession, st.sessionPK, st.insSession,
		st.updSession, st.delSession, st.lineage, st.ownClaim, st.insClaim, st.delClaim, st.dataVersion}
	for _, m := range []map[int]*sql.Stmt{st.insEvents, st.insMessages, st.insParts} {
		for _, p := range m {
			all = append(all, p)
		}
	}
	for _, p := range all {
		if p != nil {
			p.Close()
		}
	}
}
