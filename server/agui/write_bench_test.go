package agui

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentpool/agentpool/bench"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
)

// BenchmarkSSEWrite: one AG-UI stream on a loopback socket, the server's
// writer (sseWriter) writing a batch of events per op and the client
// (net/http, a line scanner, as in BenchmarkScale) reading them before the
// next write, so that every write costs its own system calls on both
// sides, as a paced stream's writes do. It reports the process's CPU time
// per write: the difference between batch sizes is what an event costs
// beside its write, and what is left what the write itself costs.
func BenchmarkSSEWrite(b *testing.B) {
	for _, k := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("events=%d", k), func(b *testing.B) {
			tmpl := &wire.Event{Type: wire.TypeTextMessageContent, SubagentRunID: "ses_7f3a9c0e21ffe6QmZ0bW1NKD3f9a", MessageID: "msg_7f3a9c0e2200016c4q0W8xYJ1k2b"}
			batch := make([]item, k)
			for i := range batch {
				batch[i] = item{ev: tmpl, delta: "1764460800000000000 ", ts: 1764460800000, class: classDelta}
			}
			read := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sw := newSSEWriter(w, -1, time.Minute)
				defer sw.close()
				for range b.N {
					if err := sw.write(batch); err != nil {
						b.Error(err)
						return
					}
					select {
					case <-read:
					case <-r.Context().Done():
						return
					}
				}
			}))
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := bench.CPUTime()
			for range b.N {
				for n := 0; n < k && sc.Scan(); {
					if bytes.HasPrefix(sc.Bytes(), []byte("data: ")) {
						n++
					}
				}
				read <- struct{}{}
			}
			b.ReportMetric(float64((bench.CPUTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/write")
		})
	}
}
