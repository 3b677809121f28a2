package bench

import (
	"runtime/metrics"
	"time"
)

// GC is what the collector had done when ReadGC was called: its cycles and
// the CPU time of its work (mark assists, background and idle marking,
// pauses), as the runtime estimates it. The difference of two readings is
// the collector's share of what ran between them: a benchmark whose tail
// is the collector's shows it there before the wall figures do.
type GC struct {
	Cycles uint64
	CPU    time.Duration
}

// ReadGC reads the collector's figures (GC).
func ReadGC() GC {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	var g GC
	if s[0].Value.Kind() == metrics.KindUint64 {
		g.Cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64 {
		g.CPU = time.Duration(s[1].Value.Float64() * float64(time.Second))
	}
	return g
}

// Sub returns the collector's work from o to g.
func (g GC) Sub(o GC) GC { return GC{Cycles: g.Cycles - o.Cycles, CPU: g.CPU - o.CPU} }
