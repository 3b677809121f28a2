// The Temporal engine against a run in one process, and the PostgreSQL
// store against the others, measured in the same run.

package main

import (
	"fmt"
	"strconv"
	"strings"
)

// childrenPrefix names the rows of durable's BenchmarkChildren:
// temporal/workers=N/store=S and in_process/store=S.
const childrenPrefix = "BenchmarkChildren/"

// temporalSection is the table of children per second and the cost of a
// child session, on Temporal (1 and 3 workers) and in one process, from
// one go test run. Skipped rows (no dev server: AGENTPOOL_TEMPORAL_BIN
// unset) are listed with their reason.
func temporalSection(b *strings.Builder, groups []group) {
	var rows []row
	cmd := ""
	for _, g := range groups {
		for _, r := range g.rows {
			if strings.HasPrefix(r.name, childrenPrefix) {
				rows = append(rows, r)
				cmd = g.command
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	inProc := 0.0
	for _, r := range rows {
		if strings.HasPrefix(r.name, childrenPrefix+"in_process/") && r.skipped == "" {
			inProc, _ = r.get("ms/child")
		}
	}
	fmt.Fprintf(b, "## Temporal engine: child sessions (same run)\n\n")
	fmt.Fprintf(b, "Roots that delegate 10 children at once (ten `ask_worker` calls in one turn) on the fake OpenAI-compatible server without delays; ")
	fmt.Fprintf(b, "on Temporal: the dev server on loopback and 1 or 3 worker processes (the test binary); in process: the same pool run by this process. ")
	fmt.Fprintf(b, "The store (in the row name) is PostgreSQL when `make bench` could start one (tests/pg/start.sh), else SQLite. ")
	fmt.Fprintf(b, "What a child costs on Temporal is its round trips through the server and the store (see `docs/temporal.md`).\n\n")
	fmt.Fprintf(b, "| row | children/s | ms per child session | × in process (ms/child) | iterations |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		name := strings.TrimPrefix(r.name, childrenPrefix)
		if r.skipped != "" {
			fmt.Fprintf(b, "| %s | — | — | — | %s |\n", name, "skipped: "+strings.TrimPrefix(r.skipped, "pending: "))
			continue
		}
		cell := func(unit string) string {
			if v, ok := r.get(unit); ok {
				return num(v)
			}
			return "—"
		}
		ratio := "—"
		if ms, ok := r.get("ms/child"); ok && inProc > 0 {
			ratio = strconv.FormatFloat(ms/inProc, 'f', 1, 64) + "×"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %d |\n", name, cell("children/s"), cell("ms/child"), ratio, r.iters)
	}
	fmt.Fprintf(b, "\nCommand: `AGENTPOOL_TEMPORAL_BIN=bin/temporal %s` (`make bench` sets the variable; without the binary the Temporal rows skip)\n\n", cmd)
}

// postgresSection is the delegated call on the PostgreSQL store beside the
// memory and SQLite stores, from the same go test run.
func postgresSection(b *strings.Builder, groups []group) {
	const prefix = "BenchmarkDelegatedCall/store="
	pg, cmd, ok := find(groups, prefix+"postgres")
	if !ok {
		return
	}
	fmt.Fprintf(b, "## PostgreSQL store: delegated call (same run)\n\n")
	if pg.skipped != "" {
		fmt.Fprintf(b, "Not measured: %s\n\n", strings.TrimPrefix(pg.skipped, "pending: "))
		return
	}
	fmt.Fprintf(b, "The delegated call of the rows above on each store, back to back in one `go test` process; PostgreSQL is the server of tests/pg/start.sh on loopback, ")
	fmt.Fprintf(b, "default options (every commit waits for the disk; see `docs/postgres.md`).\n\n")
	fmt.Fprintf(b, "| store | ns/op | CPU ns/op | allocs/op | ÷ memory (wall) |\n|---|---|---|---|---|\n")
	mem, _, memOK := find(groups, prefix+"memory")
	memNS, _ := mem.get("ns/op")
	for _, kind := range []string{"memory", "sqlite", "postgres"} {
		r, _, ok := find(groups, prefix+kind)
		if !ok || r.skipped != "" {
			continue
		}
		ns, _ := r.get("ns/op")
		cpu, al := "—", "—"
		if v, ok := r.get("cpu-ns/op"); ok {
			cpu = dur(v)
		}
		if v, ok := r.get("allocs/op"); ok {
			al = num(v)
		}
		ratio := "—"
		if memOK && mem.skipped == "" && memNS > 0 {
			ratio = strconv.FormatFloat(ns/memNS, 'f', 1, 64) + "×"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", kind, dur(ns), cpu, al, ratio)
	}
	fmt.Fprintf(b, "\nCommand: `%s`\n\n", cmd)
}
