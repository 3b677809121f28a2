package durable

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/pool"
)

// benchFan is how many children each benchmarked root delegates to at
// once (parallel ask_worker calls of one turn).
const benchFan = 10

// BenchmarkChildren runs roots that delegate benchFan children each, on
// the fake model server without delays: on Temporal (dev server on
// loopback, one and three worker processes) and in this process, side by
// side. children/s is the throughput; ms/child what a child session costs.
//
// The store is PostgreSQL when AGENTPOOL_TEST_POSTGRES is set (as under
// make bench), else SQLite; the row names say which.
func BenchmarkChildren(b *testing.B) {
	store := "sqlite"
	if os.Getenv(pgtest.Env) != "" {
		store = "postgres"
	}
	for _, workers := range []int{1, 3} {
		b.Run(fmt.Sprintf("temporal/workers=%d/store=%s", workers, store), func(b *testing.B) {
			addr := startDevServer(b)
			api := newFakeAPI(b, 0)
			api.fan = benchFan
			db := testDB(b)
			st := openTestDB(b, db)
			for i := range workers {
				startWorker(b, workerConfig{Address: addr, DB: db, BaseURL: api.URL + "/v1", Key: fmt.Sprintf("key-%d", i)})
			}
			p, err := e2ePool(api.URL+"/v1", "key-client", st)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger{}})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			node, _ := p.Node("boss")
			run := func() {
				_, out, err := RunRoot(context.Background(), c, st, RootRequest{Node: node, Prompt: "fan out", TaskQueue: testQueue}, event.SinkFunc(func(event.Event) {}))
				if err != nil || out.StopReason != event.StopCompleted {
					b.Fatalf("run: %+v, %v", out, err)
				}
			}
			run() // workers warm (first workflow tasks, connections)
			b.ResetTimer()
			for b.Loop() {
				run()
			}
			report(b)
		})
	}
	b.Run("in_process/store="+store, func(b *testing.B) {
		api := newFakeAPI(b, 0)
		api.fan = benchFan
		st := openTestDB(b, testDB(b))
		p, err := e2ePool(api.URL+"/v1", "key-client", st)
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		for b.Loop() {
			res, err := p.RunSink(context.Background(), pool.RunRequest{Node: "boss", Prompt: "fan out"}, event.SinkFunc(func(event.Event) {}))
			if err != nil || res.Result.StopReason != event.StopCompleted {
				b.Fatalf("run: %+v, %v", res.Result, err)
			}
		}
		report(b)
	})
}

func report(b *testing.B) {
	children := float64(benchFan * b.N)
	b.ReportMetric(children/b.Elapsed().Seconds(), "children/s")
	b.ReportMetric(b.Elapsed().Seconds()*1000/children, "ms/child")
}
