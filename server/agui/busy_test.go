package agui

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/internal/servertest"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// gateStore, once armed, holds every Messages call (a resumed run reads
// its history there) until each of the requests it waits for has either
// reached it or been answered, so that concurrent runs on one thread are
// all past their checks together before any of them starts.
type gateStore struct {
	session.Store

	mu                      sync.Mutex
	want, arrived, answered int
	open                    chan struct{}
}

func (g *gateStore) arm(want int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.want, g.arrived, g.answered, g.open = want, 0, 0, make(chan struct{})
}

func (g *gateStore) Messages(ctx context.Context, sid string) ([]session.Message, error) {
	g.mu.Lock()
	g.arrived++
	g.checkLocked()
	open := g.open
	g.mu.Unlock()
	if open != nil {
		<-open
	}
	return g.Store.Messages(ctx, sid)
}

func (g *gateStore) answer() {
	g.mu.Lock()
	g.answered++
	g.checkLocked()
	g.mu.Unlock()
}

func (g *gateStore) checkLocked() {
	if g.open == nil || g.arrived+g.answered < g.want {
		return
	}
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// Concurrent POSTs on one thread: exactly one of them runs, every other one
// is answered 409, in every trial.
func TestConcurrentRunsOnOneThread(t *testing.T) {
	gate := &gateStore{Store: memory.New()}
	p := servertest.PoolWith(t, `
agents:
  boss:
    model: {type: test, custom_output_text: "answer"}
`, pool.Options{Store: gate})
	_, ts := newServer(t, p, Options{})
	runOK(t, ts.URL+"/", runBody("thread-contended", "first"))

	const posts = 4
	for trial := range 15 {
		gate.arm(posts)
		codes := make([]int, posts)
		bodies := make([]string, posts)
		var wg sync.WaitGroup
		for i := range posts {
			wg.Go(func() {
				defer gate.answer()
				req, _ := http.NewRequest("POST", ts.URL+"/", strings.NewReader(runBody("thread-contended", "again")))
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				codes[i], bodies[i] = resp.StatusCode, string(b)
			})
		}
		wg.Wait()
		ran := 0
		for i, c := range codes {
			switch {
			case c == http.StatusOK:
				ran++
			case c != http.StatusConflict || !strings.Contains(bodies[i], `"error"`):
				t.Fatalf("trial %d: status %d: %s", trial, c, bodies[i])
			}
		}
		if ran != 1 {
			t.Fatalf("trial %d: %d of %d concurrent runs on one thread ran (statuses %v), want exactly 1", trial, ran, posts, codes)
		}
	}
}
