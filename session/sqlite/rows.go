// Buffered message rows: the messages (and their parts) of many ops go
// into multi-row inserts, as the event rows do (insertRows).

package sqlite

import "context"

type msgRow struct {
	pk  int64
	sid string
	m   *encMessage
}

type partRow struct {
	seq int64 // the message's key
	idx int
	p   *encPart
}

// chunk is the largest multi-row size that n rows fill.
func chunk(n int) int {
	for _, size := range multiRow {
		if n >= size {
			return size
		}
	}
	return 1
}

// insertMessages writes the buffered messages in order, then their parts.
// A message whose session was deleted after the append was accepted is
// dropped (with a warning); any other failure fails the transaction.
func (s *Store) insertMessages(ctx context.Context, st *txStatements) error {
	msgs := s.mrows
	s.mrows = s.mrows[:0]
	defer clear(msgs) // drop references to the ops' messages
	for len(msgs) > 0 {
		n := chunk(len(msgs))
		batch := msgs[:n]
		msgs = msgs[n:]
		args := s.args[:0]
		for _, r := range batch {
			args = append(args, r.m.id, r.pk, r.m.agent, r.m.role, r.m.synthetic, r.m.created)
		}
		s.args = args
		res, err := st.get(st.insMessages[n]).ExecContext(ctx, args...)
		if err != nil {
			if !isForeignKey(err) {
				return err
			}
			for _, r := range batch {
				if err := s.insertMessage(ctx, st, r); err != nil {
					return err
				}
			}
			continue
		}
		last, err := res.LastInsertId()
		if err != nil {
			return err
		}
		// The rows got consecutive keys, in order: with AUTOINCREMENT a
		// new row's key is one more than the largest key the table ever
		// had, and the transaction holds the write lock.
		parts := s.prows[:0]
		for i, r := range batch {
			seq := last - int64(n-1-i)
			for k := range r.m.parts {
				parts = append(parts, partRow{seq: seq, idx: k, p: &r.m.parts[k]})
			}
		}
		s.prows = parts
		err = s.insertParts(ctx, st, parts)
		clear(parts)
		if err != nil {
			return err
		}
	}
	return nil
}

// insertMessage writes one message and its parts, dropping it (with a
// warning) when its session is gone.
func (s *Store) insertMessage(ctx context.Context, st *txStatements, r msgRow) error {
	res, err := st.get(st.insMessages[1]).ExecContext(ctx, r.m.id, r.pk, r.m.agent, r.m.role, r.m.synthetic, r.m.created)
	if err != nil {
		if isForeignKey(err) {
			s.log.Warn("session store: message of a deleted session dropped", "session", r.sid, "message", r.m.id)
			return nil
		}
		return err
	}
	seq, err := res.LastInsertId()
	if err != nil {
		return err
	}
	parts := make([]partRow, len(r.m.parts))
	for k := range r.m.parts {
		parts[k] = partRow{seq: seq, idx: k, p: &r.m.parts[k]}
	}
	return s.insertParts(ctx, st, parts)
}

func (s *Store) insertParts(ctx context.Context, st *txStatements, parts []partRow) error {
	for len(parts) > 0 {
		n := chunk(len(parts))
		args := s.args[:0]
		for _, r := range parts[:n] {
			p := r.p
			args = append(args, r.seq, r.idx, p.kind, p.text, p.callID, p.tool, p.args, p.isError)
		}
		s.args = args
		if _, err := st.get(st.insParts[n]).ExecContext(ctx, args...); err != nil {
			return err
		}
		parts = parts[n:]
	}
	clear(s.args)
	return nil
}
