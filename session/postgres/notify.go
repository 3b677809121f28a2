// SubscribeEvents: notices of appends, from every process, over
// LISTEN/NOTIFY.

package postgres

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentpool/agentpool/session"
)

// notifier is the store's one listening connection and its subscribers.
// The listener starts with the first subscription and runs until Close;
// each notice goes to every subscriber's pending set, so a slow subscriber
// never holds the listener up and sees several notices of a session as
// one.
type notifier struct {
	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	started bool
	stopped bool
	cancel  context.CancelFunc // stops the listener
	wg      sync.WaitGroup     // the listener and the forwarders

	// Tests: called after the connection was lost, before the next one.
	beforeReconnect func()
	listenPID       atomic.Uint32 // the listener's server process, for tests
}

type subscriber struct {
	mu      sync.Mutex
	pending map[string]struct{}
	order   []string
	wake    chan struct{}
}

func (n *notifier) init() { n.subs = map[*subscriber]struct{}{} }

func (n *notifier) stop() {
	n.mu.Lock()
	n.stopped = true
	if n.cancel != nil {
		n.cancel()
	}
	n.mu.Unlock()
	n.wg.Wait()
}

// broadcast queues a notice for session id to every subscriber.
func (n *notifier) broadcast(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for sub := range n.subs {
		sub.mu.Lock()
		if _, ok := sub.pending[id]; !ok {
			sub.pending[id] = struct{}{}
			sub.order = append(sub.order, id)
		}
		sub.mu.Unlock()
		select {
		case sub.wake <- struct{}{}:
		default:
		}
	}
}

// SubscribeEvents implements session.EventNotifier. The first call starts
// the store's listener (LISTEN on the schema's channel) and returns once
// it listens, so that every append committed after the call is noticed.
//
// When the listening connection is lost it is made again (backing off up
// to a few seconds); once it listens again, every session with events
// committed after the last notice received (GlobalSeq above it: the
// payload of each notice carries the GlobalSeq of the session's last
// event in its append) gets a notice, so nothing appended while the
// listener was away goes unnoticed.
func (s *Store) SubscribeEvents(ctx context.Context) (<-chan string, error) {
	if s.isClosed() {
		return nil, session.ErrClosed
	}
	n := &s.notify
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return nil, session.ErrClosed
	}
	if !n.started {
		lctx, cancel := context.WithCancel(context.Background())
		conn, mark, err := s.listen(ctx)
		if err != nil {
			cancel()
			n.mu.Unlock()
			return nil, s.wrap(err)
		}
		n.started, n.cancel = true, cancel
		n.wg.Add(1)
		go s.listenLoop(lctx, conn, mark)
	}
	sub := &subscriber{pending: map[string]struct{}{}, wake: make(chan struct{}, 1)}
	n.subs[sub] = struct{}{}
	n.mu.Unlock()
	out := make(chan string)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer close(out)
		defer func() {
			n.mu.Lock()
			delete(n.subs, sub)
			n.mu.Unlock()
		}()
		for {
			sub.mu.Lock()
			var next string
			if len(sub.order) > 0 {
				next = sub.order[0]
				sub.order = sub.order[1:]
				delete(sub.pending, next)
			}
			sub.mu.Unlock()
			if next == "" {
				select {
				case <-sub.wake:
					continue
				case <-ctx.Done():
					return
				case <-s.done:
					return
				}
			}
			select {
			case out <- next:
			case <-ctx.Done():
				return
			case <-s.done:
				return
			}
		}
	}()
	return out, nil
}

// listen connects a listening connection and returns it with the last
// GlobalSeq committed when it started listening.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, int64, error) {
	conn, err := pgx.ConnectConfig(ctx, s.connCfg.Copy())
	if err != nil {
		return nil, 0, err
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, 0, err
	}
	var mark int64
	if err := conn.QueryRow(ctx, `SELECT last FROM event_counter`).Scan(&mark); err != nil {
		conn.Close(context.Background())
		return nil, 0, err
	}
	s.notify.listenPID.Store(conn.PgConn().PID())
	return conn, mark, nil
}

// listenLoop delivers the notices of conn until ctx ends, and makes the
// connection again when it is lost.
func (s *Store) listenLoop(ctx context.Context, conn *pgx.Conn, mark int64) {
	n := &s.notify
	defer n.wg.Done()
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	backoff := 50 * time.Millisecond
	for {
		for conn != nil {
			note, err := conn.WaitForNotification(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.log.Warn("session store: lost the connection that listens for events; reconnecting", "db", s.url, "err", redact(err, s.password))
				conn.Close(context.Background())
				conn = nil
				break
			}
			g, id, ok := strings.Cut(note.Payload, " ")
			if !ok {
				continue
			}
			if v, err := strconv.ParseInt(g, 10, 64); err == nil && v > mark {
				mark = v
			}
			n.broadcast(id)
		}
		n.mu.Lock()
		hook := n.beforeReconnect
		n.mu.Unlock()
		if hook != nil {
			hook()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		c, _, err := s.listen(ctx)
		if err != nil {
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		// Listening again: the sessions appended to while nobody
		// listened get their notice.
		missed, err := s.appendedSince(ctx, c, mark)
		if err != nil {
			c.Close(context.Background())
			continue
		}
		conn = c
		for _, m := range missed {
			mark = max(mark, m.gseq)
			n.broadcast(m.id)
		}
	}
}

type appended struct {
	id   string
	gseq int64
}

// appendedSince returns the sessions with events above GlobalSeq mark,
// in the order of their last such event.
func (s *Store) appendedSince(ctx context.Context, conn *pgx.Conn, mark int64) ([]appended, error) {
	rows, err := conn.Query(ctx, `SELECT s.id, max(e.gseq) AS g FROM events e JOIN sessions s ON s.pk = e.session_pk
		WHERE e.gseq > $1 GROUP BY s.id ORDER BY g`, mark)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (appended, error) {
		var a appended
		err := r.Scan(&a.id, &a.gseq)
		return a, err
	})
}
