package main

import (
	"fmt"
	"strconv"
	"strings"
)

// tracing writes the delegated call with OpenTelemetry off (no provider:
// nothing instrumented) and on (the SDK with a no-op exporter, with and
// without metrics), side by side.
func tracing(b *strings.Builder, groups []group) {
	off, offCmd, ok := find(groups, "BenchmarkDelegatedCall/store=memory")
	if !ok || off.skipped != "" {
		return
	}
	fmt.Fprintf(b, "## Tracing overhead: delegated call, memory store\n\n")
	fmt.Fprintf(b, "Off: no tracer or meter provider (the default; nothing is wrapped). On: the OpenTelemetry SDK's tracer provider with its batching processor and a no-op exporter ")
	fmt.Fprintf(b, "(what the process pays, without the network), 6 spans per call; `+metrics` adds the SDK's meter provider (see `docs/tracing.md`).\n\n")
	fmt.Fprintf(b, "| tracing | ns/op | CPU ns/op | B/op | allocs/op | × off (CPU) | command |\n|---|---|---|---|---|---|---|\n")
	offCPU, _ := off.get("cpu-ns/op")
	line := func(label string, r row, cmd string) {
		ns, _ := r.get("ns/op")
		cpu, hasCPU := r.get("cpu-ns/op")
		bop, _ := r.get("B/op")
		al, _ := r.get("allocs/op")
		cpuS, ratio := "—", "—"
		if hasCPU {
			cpuS = dur(cpu)
			if offCPU > 0 {
				ratio = strconv.FormatFloat(cpu/offCPU, 'f', 2, 64) + "×"
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | `%s` |\n", label, dur(ns), cpuS, num(bop), num(al), ratio, cmd)
	}
	line("off", off, offCmd)
	for _, v := range []string{"spans", "spans+metrics"} {
		if r, cmd, ok := find(groups, "BenchmarkDelegatedCallTraced/"+v); ok && r.skipped == "" {
			line("on: "+v, r, cmd)
		}
	}
	fmt.Fprintf(b, "\n")
}
