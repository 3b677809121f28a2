// Package fallback is a model made of other models tried in order:
// AgentPool's `type: fallback` (pydantic-ai's FallbackModel). A model that
// fails before it streamed anything is followed by the next; once one has
// streamed a chunk, its answer is the answer, error included, since the
// caller has already seen part of it.
package fallback

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/agentpool/agentpool/model"
)

// Model tries its models in order. It holds no per-call state and is safe
// for concurrent use. It has no price of its own (model.Pricing): the cost
// of a call depends on which model answered.
type Model struct {
	models []model.Model
	id     string
}

var _ model.Model = (*Model)(nil)

// New returns a model that tries models in order; at least one is needed.
func New(models ...model.Model) (*Model, error) {
	if len(models) == 0 {
		return nil, errors.New("fallback: at least one model is required")
	}
	ids := make([]string, len(models))
	for i, m := range models {
		if m == nil {
			return nil, fmt.Errorf("fallback: model %d is nil", i)
		}
		ids[i] = m.ID()
	}
	return &Model{models: models, id: "fallback:" + strings.Join(ids, ",")}, nil
}

// ID returns "fallback:" and the ids of the models, comma-separated.
func (m *Model) ID() string { return m.id }

// Models returns the models, in the order they are tried.
func (m *Model) Models() []model.Model { return append([]model.Model(nil), m.models...) }

// Stream streams the answer of the first model that does not fail before
// its first chunk. When every model fails, the error names each model and
// its error. A cancelled context is never a reason to try the next model.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		var errs []error
		for _, mm := range m.models {
			started, failed := false, false
			for c, err := range mm.Stream(ctx, req) {
				if err != nil {
					if started || ctx.Err() != nil {
						yield(model.Chunk{}, err)
						return
					}
					errs = append(errs, fmt.Errorf("%s: %w", mm.ID(), err))
					failed = true
					break
				}
				started = true
				if !yield(c, nil) {
					return
				}
			}
			if !failed {
				return
			}
		}
		yield(model.Chunk{}, fmt.Errorf("every model of the fallback failed: %w", errors.Join(errs...)))
	}
}
