package acp

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/agentpool/agentpool/bench"
)

// scaleSessions is how many ACP sessions BenchmarkScale prompts at once
// on one connection.
const scaleSessions = 100

// BenchmarkScale opens scaleSessions sessions on one connection (the
// in-process client of BenchmarkProtocolStream), then per op sends one
// session/prompt to each of them at once (each root spawns a child that
// streams 200 deltas) and reads until every prompt has its response.
// events/s counts the session/update notifications; peak-rss-MB is the
// process's peak resident set size during the ops.
func BenchmarkScale(b *testing.B) {
	b.Run(fmt.Sprintf("acp/sessions=%d", scaleSessions), func(b *testing.B) {
		c, err := startACP(200)
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := c.close(); err != nil {
				b.Error(err)
			}
		}()
		sids := make([]string, scaleSessions)
		for i := range sids {
			if err := c.newSession(); err != nil {
				b.Fatal(err)
			}
			sids[i] = c.sid
		}
		respPrefix := []byte(`{"jsonrpc":"2.0","id":`)
		round := func() int {
			for _, sid := range sids {
				if _, err := c.send("session/prompt", `{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"emit"}]}`); err != nil {
					b.Fatal(err)
				}
			}
			updates, answered := 0, 0
			for answered < scaleSessions {
				line, err := c.out.ReadSlice('\n')
				if err != nil {
					b.Fatalf("after %d updates and %d answers: %v", updates, answered, err)
				}
				switch {
				case bytes.HasPrefix(line, updatePrefix):
					updates++
				case bytes.HasPrefix(line, respPrefix):
					if !bytes.Contains(line, []byte(`"stopReason":"end_turn"`)) {
						b.Fatalf("prompt answer: %.300s", line)
					}
					answered++
				default:
					b.Fatalf("unexpected line: %.300s", line)
				}
			}
			return updates
		}
		round() // warm up
		updates := 0
		var peak uint64
		b.ReportAllocs()
		for b.Loop() {
			hp := bench.StartHeapPeak(time.Millisecond)
			updates += round()
			hp.Stop()
			peak = max(peak, hp.PeakRSS())
		}
		b.ReportMetric(float64(updates)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(updates)/float64(b.N), "updates/op")
		b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MB")
	})
}
