package fallback_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/fallback"
)

// fake streams chunks, then fails with err (when set); calls counts its
// calls.
type fake struct {
	id     string
	chunks []string
	err    error
	calls  int
}

func (f *fake) ID() string { return f.id }

func (f *fake) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Chunk, error] {
	f.calls++
	return func(yield func(model.Chunk, error) bool) {
		for _, c := range f.chunks {
			if !yield(model.Chunk{Kind: model.ChunkText, Text: c}, nil) {
				return
			}
		}
		if f.err != nil {
			yield(model.Chunk{}, f.err)
		} else if err := ctx.Err(); err != nil {
			yield(model.Chunk{}, err)
		}
	}
}

func play(m model.Model, ctx context.Context) (string, error) {
	var b strings.Builder
	for c, err := range m.Stream(ctx, &model.Request{}) {
		if err != nil {
			return b.String(), err
		}
		b.WriteString(c.Text)
	}
	return b.String(), nil
}

func TestFallbackOrder(t *testing.T) {
	down := &fake{id: "a", err: errors.New("503 unavailable")}
	up := &fake{id: "b", chunks: []string{"hel", "lo"}}
	never := &fake{id: "c", chunks: []string{"no"}}
	m, err := fallback.New(down, up, never)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID() != "fallback:a,b,c" {
		t.Errorf("ID = %s", m.ID())
	}
	if out, err := play(m, context.Background()); out != "hello" || err != nil {
		t.Fatalf("play = %q, %v", out, err)
	}
	if down.calls != 1 || up.calls != 1 || never.calls != 0 {
		t.Errorf("calls: %d %d %d", down.calls, up.calls, never.calls)
	}
}

// Once a model has streamed, its error is the answer: the caller has seen
// part of it.
func TestFallbackAfterStart(t *testing.T) {
	broken := &fake{id: "a", chunks: []string{"par"}, err: errors.New("connection reset")}
	next := &fake{id: "b", chunks: []string{"x"}}
	m, _ := fallback.New(broken, next)
	out, err := play(m, context.Background())
	if out != "par" || err == nil || err.Error() != "connection reset" || next.calls != 0 {
		t.Errorf("play = %q, %v (next called %d)", out, err, next.calls)
	}
}

func TestFallbackAllFail(t *testing.T) {
	m, _ := fallback.New(&fake{id: "a", err: errors.New("401")}, &fake{id: "b", err: errors.New("429")})
	_, err := play(m, context.Background())
	if err == nil || !strings.Contains(err.Error(), "a: 401") || !strings.Contains(err.Error(), "b: 429") {
		t.Errorf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	second := &fake{id: "b"}
	m, _ = fallback.New(&fake{id: "a"}, second)
	if _, err := play(m, ctx); !errors.Is(err, context.Canceled) || second.calls != 0 {
		t.Errorf("cancelled: %v, second called %d times", err, second.calls)
	}
	if _, err := fallback.New(); err == nil {
		t.Error("New() without models succeeded")
	}
}
