package acp

import (
	"bytes"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
)

// BenchmarkOutboxChunks: chunks through the outbox to a client that reads
// at once (io.Discard): queueing, the writer's turn and the encoding, per
// chunk. When the producer gets ahead of the writer by a full queue,
// chunks merge (merged/op).
func BenchmarkOutboxChunks(b *testing.B) {
	for _, sessions := range []int{1, 8} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			sids := make([]string, sessions)
			for i := range sids {
				sids[i] = fmt.Sprintf("ses_%024d", i)
			}
			var u any = chunkUpdate{SessionUpdate: updateAgentMessageChunk, Content: textBlock("token ")}
			o := newOutbox(io.Discard, 0, nil)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				sid := sids[i%sessions]
				if err := o.update(sid, sid, u); err != nil {
					b.Fatal(err)
				}
			}
			o.close()
			o.wait()
			merged, _ := o.stats()
			b.ReportMetric(float64(merged)/float64(b.N), "merged/op")
		})
	}
}

// BenchmarkOutboxChunksParallel: one producer per session (as prompts
// run), all through one writer.
func BenchmarkOutboxChunksParallel(b *testing.B) {
	var u any = chunkUpdate{SessionUpdate: updateAgentMessageChunk, Content: textBlock("token ")}
	o := newOutbox(io.Discard, 0, nil)
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		sid := fmt.Sprintf("ses_%024d", n.Add(1))
		for pb.Next() {
			if err := o.update(sid, sid, u); err != nil {
				b.Fatal(err)
			}
		}
	})
	o.close()
	o.wait()
	merged, _ := o.stats()
	b.ReportMetric(float64(merged)/float64(b.N), "merged/op")
}

// lineCounter counts the lines written and signals each write.
type lineCounter struct {
	lines atomic.Int64
	wrote chan struct{}
}

func (w *lineCounter) Write(p []byte) (int, error) {
	w.lines.Add(int64(bytes.Count(p, []byte{'\n'})))
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

// BenchmarkOutboxRoundTrip: rounds of 64 chunks (far below the bound, so
// none merges), each written before the next round: the cost of queueing,
// taking and encoding one chunk, without coalescing.
func BenchmarkOutboxRoundTrip(b *testing.B) {
	for _, sessions := range []int{1, 8} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			sids := make([]string, sessions)
			for i := range sids {
				sids[i] = fmt.Sprintf("ses_%024d", i)
			}
			var u any = chunkUpdate{SessionUpdate: updateAgentMessageChunk, Content: textBlock("token ")}
			w := &lineCounter{wrote: make(chan struct{}, 1)}
			o := newOutbox(w, 0, nil)
			b.ReportAllocs()
			b.ResetTimer()
			sent := 0
			for sent < b.N {
				for range min(64, b.N-sent) {
					sid := sids[sent%sessions]
					if err := o.update(sid, sid, u); err != nil {
						b.Fatal(err)
					}
					sent++
				}
				for w.lines.Load() < int64(sent) {
					<-w.wrote
				}
			}
			b.StopTimer()
			o.close()
			o.wait()
			if merged, _ := o.stats(); merged != 0 {
				b.Fatalf("%d merged", merged)
			}
		})
	}
}
