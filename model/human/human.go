package human

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/model"
)

// MaxAnswerBytes bounds one answer: a person types far less; more is a
// paste gone wrong.
const MaxAnswerBytes = 1 << 20

// ErrNobodyToAsk is the error of a turn when no Asker is attached.
var ErrNobodyToAsk = errors.New("a person answers for this agent (model: input), and nobody can be asked here: run it with agentpool run on a terminal")

// Question is what a person is asked for one turn.
type Question struct {
	// System is the agent's system prompt ("" when ShowSystem is off).
	System string
	// Prompt is the turn's prompt: the last user message in the
	// template.
	Prompt string
	// InputPrompt is written where the person types.
	InputPrompt string
}

// Asker puts a question to a person and returns their answer. It must
// return ctx's error when ctx ends first.
type Asker interface {
	AskHuman(ctx context.Context, q Question) (string, error)
}

// Config is how a Model asks.
type Config struct {
	// PromptTemplate shows the prompt; "{prompt}" in it is replaced by
	// the last user message ("" means "{prompt}").
	PromptTemplate string
	// ShowSystem puts the system prompt in the question.
	ShowSystem bool
	// InputPrompt is Question.InputPrompt.
	InputPrompt string
}

// Desk is where Models find their Asker: a program attaches one (its
// terminal) and detaches it when it stops. The zero Desk has none. It is
// safe for concurrent use.
type Desk struct {
	mu    sync.Mutex
	asker Asker
	gen   uint64 // counts Attach calls: a detach undoes its own attach only
}

// Attach makes a the Asker of every Model of d, until the returned
// function is called (a later Attach replaces it earlier).
func (d *Desk) Attach(a Asker) (detach func()) {
	d.mu.Lock()
	d.gen++
	d.asker = a
	gen := d.gen
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		if d.gen == gen {
			d.asker = nil
		}
		d.mu.Unlock()
	}
}

func (d *Desk) current() Asker {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.asker
}

// Model is the input model. Make one with New.
type Model struct {
	cfg  Config
	desk *Desk
}

// New returns a Model that asks through desk's Asker.
func New(cfg Config, desk *Desk) *Model {
	if cfg.PromptTemplate == "" {
		cfg.PromptTemplate = "{prompt}"
	}
	return &Model{cfg: cfg, desk: desk}
}

// ID is "input".
func (m *Model) ID() string { return "input" }

// Stream asks the person and yields their answer as one text chunk, then
// a finish chunk.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		a := m.desk.current()
		if a == nil {
			yield(model.Chunk{}, ErrNobodyToAsk)
			return
		}
		answer, err := a.AskHuman(ctx, m.question(req))
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		if len(answer) > MaxAnswerBytes {
			yield(model.Chunk{}, fmt.Errorf("the answer is %d bytes, more than %d", len(answer), MaxAnswerBytes))
			return
		}
		if answer != "" && !yield(model.Chunk{Kind: model.ChunkText, Text: answer}, nil) {
			return
		}
		yield(model.Chunk{Kind: model.ChunkFinish, FinishReason: model.FinishStop}, nil)
	}
}

// question builds the question of req: its last user message in the
// template, and the system prompt when shown.
func (m *Model) question(req *model.Request) Question {
	prompt := ""
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if msg := req.Messages[i]; msg.Role == model.RoleUser && msg.Text() != "" {
			prompt = msg.Text()
			break
		}
	}
	q := Question{Prompt: strings.ReplaceAll(m.cfg.PromptTemplate, "{prompt}", prompt), InputPrompt: m.cfg.InputPrompt}
	if m.cfg.ShowSystem {
		q.System = req.System
	}
	return q
}
