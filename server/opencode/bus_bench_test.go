package opencode

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkHubPublish: events fanned out to subscribers that take them at
// once, per published event.
func BenchmarkHubPublish(b *testing.B) {
	for _, subs := range []int{1, 4} {
		b.Run(fmt.Sprintf("subscribers=%d", subs), func(b *testing.B) {
			h := newHub(0)
			done := make(chan int, subs)
			for range subs {
				s := h.subscribe("", false, lifecycle("", "server.connected"))
				go func() {
					n := 0
					for {
						batch, ok := take(s, context.Background(), nil)
						if !ok {
							done <- n
							return
						}
						n += len(batch)
					}
				}()
			}
			e := lifecycle("ses_a", "session.status")
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				h.publish(e)
			}
			h.close()
			for range subs {
				<-done
			}
		})
	}
}

// BenchmarkDeltaFrame: the SSE frame of a text delta, the most frequent
// event, encoded at write time for each subscriber.
func BenchmarkDeltaFrame(b *testing.B) {
	e := delta("ses_0123456789abcdefghijklmn", "prt_0123456789abcdefghijklmn", "a token or two ")
	e.delta.MessageID = "msg_0123456789abcdefghijklmn"
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = e.appendFrame(buf[:0], false, []byte("evt_0123456789abcdefghijklmn"))
	}
}
