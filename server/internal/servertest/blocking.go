package servertest

import (
	"context"
	"iter"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
)

// BlockingRegistry returns a registry with the offline models and the
// model type `blocking`: a model that sends the id of the session that
// asks it on started, then streams nothing until its context ends (the
// session was cancelled). Tests of cancellation wait on started instead
// of on time.
func BlockingRegistry(started chan<- string) *pool.Registry {
	return pool.NewRegistry().AddModel("blocking", func(config.ModelSpec) (model.Model, error) {
		return blocking{started}, nil
	})
}

type blocking struct{ started chan<- string }

func (blocking) ID() string { return "blocking" }

func (b blocking) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		sid := ""
		if inv := spawn.InvocationFrom(ctx); inv != nil {
			sid = inv.Session.ID
		}
		select {
		case b.started <- sid:
		case <-ctx.Done():
		}
		<-ctx.Done()
		yield(model.Chunk{}, context.Cause(ctx))
	}
}
