package main

import (
	"strings"
	"testing"
)

const sampleChildren = `pkg: github.com/agentpool/agentpool/durable
BenchmarkChildren/temporal/workers=1/store=postgres
BenchmarkChildren/temporal/workers=1/store=postgres-2         	       3	2935874518 ns/op	         3.406 children/s	       293.6 ms/child	 1248800 B/op	   17682 allocs/op
BenchmarkChildren/temporal/workers=3/store=postgres
    bench_test.go:34: AGENTPOOL_TEMPORAL_BIN is not set: no Temporal dev server
--- SKIP: BenchmarkChildren/temporal/workers=3/store=postgres
BenchmarkChildren/in_process/store=postgres-2                 	       5	 221940173 ns/op	        45.06 children/s	        22.19 ms/child	 1787112 B/op	   19871 allocs/op
pkg: github.com/agentpool/agentpool/bench
BenchmarkDelegatedCall/store=memory-2         	   42074	     28172 ns/op	     38943 cpu-ns/op	        18.00 events/op	   12094 B/op	      94 allocs/op
BenchmarkDelegatedCall/store=postgres-2       	      32	  37031361 ns/op	   7163906 cpu-ns/op	        18.00 events/op	   81542 B/op	    1437 allocs/op
`

// The Temporal and PostgreSQL sections carry the rows of one run, ratios
// to the in-process (memory) row, and a skipped row with its reason.
func TestTemporalAndPostgresSections(t *testing.T) {
	groups := []group{parse("go test ./durable", []byte(sampleChildren))}
	var b strings.Builder
	temporalSection(&b, groups)
	postgresSection(&b, groups)
	out := b.String()
	for _, want := range []string{
		"| temporal/workers=1/store=postgres | 3.41 | 294 | 13.2× | 3 |",
		"| temporal/workers=3/store=postgres | — | — | — | skipped: AGENTPOOL_TEMPORAL_BIN is not set: no Temporal dev server |",
		"| in_process/store=postgres | 45.1 | 22.2 | 1.0× | 5 |",
		"| postgres | 37.03 ms | 7.16 ms | 1,437 | 1314.5× |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	b.Reset()
	temporalSection(&b, nil)
	postgresSection(&b, nil)
	if b.Len() != 0 {
		t.Errorf("sections without their rows: %q", b.String())
	}
}
