package compare

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/bench"
)

// results keeps the ns/op of each side's last (final) benchmark round.
var (
	resultsMu sync.Mutex
	results   = map[string]float64{}
)

func record(b *testing.B, name string) {
	resultsMu.Lock()
	results[name] = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	resultsMu.Unlock()
}

// TestMain prints the ratio of every eino variant to agentpool after the
// benchmarks ran.
func TestMain(m *testing.M) {
	code := m.Run()
	resultsMu.Lock()
	defer resultsMu.Unlock()
	ap, ok := results["agentpool"]
	if ok && len(results) > 1 {
		names := make([]string, 0, len(results))
		for n := range results {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Println("delegated call, one benchmark run:")
		for _, n := range names {
			fmt.Printf("  %-16s %12.0f ns/op   %6.2fx agentpool\n", n, results[n], results[n]/ap)
		}
	}
	os.Exit(code)
}

// reportCPU reports the process CPU time per op (see bench.CPUTime).
func reportCPU(b *testing.B, cpu time.Duration) {
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkDelegatedCall runs the same delegated call on agentpool (the
// workload of package bench, memory store) and on eino's agent-as-tool.
func BenchmarkDelegatedCall(b *testing.B) {
	ctx := context.Background()
	b.Run("agentpool", func(b *testing.B) {
		d, err := bench.NewDelegated(nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Run(ctx); err != nil {
			b.Fatal(err)
		}
		d.Sink.Reset()
		b.ReportAllocs()
		cpu := bench.CPUTime()
		for b.Loop() {
			if err := d.Run(ctx); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, bench.CPUTime()-cpu)
		b.ReportMetric(float64(d.Sink.N)/float64(b.N), "events/op")
		record(b, "agentpool")
	})
	for _, streaming := range []bool{false, true} {
		name := "eino"
		if streaming {
			name = "eino-streaming"
		}
		b.Run(name, func(b *testing.B) {
			e, err := NewEino(ctx, streaming)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := e.Run(ctx); err != nil {
				b.Fatal(err)
			}
			e.Events = 0
			b.ReportAllocs()
			cpu := bench.CPUTime()
			for b.Loop() {
				if _, err := e.Run(ctx); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, bench.CPUTime()-cpu)
			b.ReportMetric(float64(e.Events)/float64(b.N), "events/op")
			record(b, name)
		})
	}
}

// TestEinoWorkload checks that the eino side really delegates: the worker's
// events reach the parent's stream and the parent answers after the tool.
func TestEinoWorkload(t *testing.T) {
	ctx := context.Background()
	for _, streaming := range []bool{false, true} {
		e, err := NewEino(ctx, streaming)
		if err != nil {
			t.Fatal(err)
		}
		it := e.runner.Query(ctx, "Delegate the work.")
		var agents []string
		sawWorkerDone := false
		for {
			ev, ok := it.Next()
			if !ok {
				break
			}
			if ev.Err != nil {
				t.Fatal(ev.Err)
			}
			agents = append(agents, ev.AgentName)
			if ev.AgentName == "worker" && ev.Output != nil && ev.Output.MessageOutput != nil {
				msg, err := ev.Output.MessageOutput.GetMessage()
				if err != nil {
					t.Fatal(err)
				}
				if msg.Content == "done" {
					sawWorkerDone = true
				}
			}
		}
		if !sawWorkerDone {
			t.Fatalf("streaming=%v: no forwarded worker event; agents %v", streaming, agents)
		}
		e2, _ := NewEino(ctx, streaming)
		if out, err := e2.Run(ctx); err != nil || out != "finished" {
			t.Fatalf("streaming=%v: %q %v", streaming, out, err)
		}
		t.Logf("streaming=%v: %d events, from %v", streaming, e2.Events, agents)
	}
}
