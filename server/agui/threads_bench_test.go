package agui

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

// answerYAML is a pool whose one agent answers at once: a run costs the
// server's and the store's work, not a model's.
const answerYAML = `
agents:
  answer:
    model: {type: scripted, turns: [{text: "ok"}]}
`

// seedThreads stores n root sessions, each the session of an AG-UI
// thread "old-<i>" (as a run on a new thread leaves it), in batches of
// concurrent creates (the SQLite writer commits each batch at once).
func seedThreads(tb testing.TB, st session.Store, n int) {
	tb.Helper()
	ctx := context.Background()
	start := time.Now().Add(-time.Duration(n) * time.Millisecond)
	const workers = 64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				at := start.Add(time.Duration(i) * time.Millisecond)
				err := st.CreateSession(ctx, session.Session{
					ID: id.Descending(id.Session), AgentName: "answer", Title: fmt.Sprint("thread ", i),
					Status: session.StatusCompleted, CreatedAt: at, UpdatedAt: at,
					Metadata: map[string]any{MetadataThreadKey: fmt.Sprint("old-", i)},
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}

// BenchmarkAGUIRunThreads is one AG-UI run on a new thread (a threadId
// the server has not seen, not a session id: what clients send) through a
// server started on a SQLite store that already holds threads=N threads,
// as after a restart. Per op: POST the RunAgentInput and read the whole
// stream. What the run itself costs is the same for every N; the lookup
// of the thread among the stored ones must not grow with N.
func BenchmarkAGUIRunThreads(b *testing.B) {
	for _, n := range []int{100, 20000} {
		b.Run(fmt.Sprintf("threads=%d", n), func(b *testing.B) {
			st, err := sqlite.Open(filepath.Join(b.TempDir(), "threads.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			seedThreads(b, st, n)
			m, err := config.Parse("answer.yaml", []byte(answerYAML))
			if err != nil {
				b.Fatal(err)
			}
			p, err := pool.New(m, pool.Options{Store: st})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { p.Close() })
			ts := httptest.NewServer(New(p, Options{}))
			b.Cleanup(ts.Close)
			client := ts.Client()
			run := 0
			b.ReportAllocs()
			for b.Loop() {
				run++
				body := fmt.Sprintf(`{"threadId":"new-%d","runId":"r-%d","messages":[{"id":"m1","role":"user","content":"hi"}]}`, run, run)
				resp, err := client.Post(ts.URL+"/", "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				out, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(out), "RUN_FINISHED") {
					b.Fatalf("run %d: %d %v %.200s", run, resp.StatusCode, err, out)
				}
			}
		})
	}
}
