package human

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/model"
)

// askerFunc is an Asker made of a function: the person of these tests.
type askerFunc func(context.Context, Question) (string, error)

func (f askerFunc) AskHuman(ctx context.Context, q Question) (string, error) { return f(ctx, q) }

// collect runs one turn and returns its text, finish reason and error.
func collect(m *Model, ctx context.Context, req *model.Request) (text, finish string, err error) {
	for c, e := range m.Stream(ctx, req) {
		if e != nil {
			return text, finish, e
		}
		switch c.Kind {
		case model.ChunkText:
			text += c.Text
		case model.ChunkFinish:
			finish = c.FinishReason
		}
	}
	return text, finish, nil
}

func TestAnswerIsTheTurn(t *testing.T) {
	var desk Desk
	m := New(Config{PromptTemplate: "Please respond to: {prompt}", ShowSystem: true, InputPrompt: "> "}, &desk)
	req := &model.Request{System: "You are the human.", Messages: []model.Message{
		model.UserText("first question"),
		{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: "an earlier answer"}}},
		model.UserText("Is the sky blue?"),
	}}
	var asked Question
	detach := desk.Attach(askerFunc(func(_ context.Context, q Question) (string, error) {
		asked = q
		return "Yes, mostly.", nil
	}))
	text, finish, err := collect(m, context.Background(), req)
	if err != nil || text != "Yes, mostly." || finish != model.FinishStop {
		t.Fatalf("turn = %q, %q, %v", text, finish, err)
	}
	want := Question{System: "You are the human.", Prompt: "Please respond to: Is the sky blue?", InputPrompt: "> "}
	if asked != want {
		t.Errorf("asked %+v, want %+v", asked, want)
	}

	// show_system off; after Detach nobody is asked.
	m = New(Config{}, &desk)
	if _, _, err := collect(m, context.Background(), req); err != nil || asked.System != "" || asked.Prompt != "Is the sky blue?" {
		t.Errorf("without ShowSystem: asked %+v, err %v", asked, err)
	}
	detach()
	if _, _, err := collect(m, context.Background(), req); !errors.Is(err, ErrNobodyToAsk) {
		t.Errorf("detached: err = %v, want ErrNobodyToAsk", err)
	}
}

func TestNobodyCancelledAndTooLong(t *testing.T) {
	var desk Desk
	m := New(Config{}, &desk)
	req := &model.Request{Messages: []model.Message{model.UserText("hi")}}
	_, _, err := collect(m, context.Background(), req)
	if !errors.Is(err, ErrNobodyToAsk) || !strings.Contains(err.Error(), "agentpool run on a terminal") {
		t.Errorf("no asker: err = %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	desk.Attach(askerFunc(func(ctx context.Context, _ Question) (string, error) {
		cancel() // the run is cancelled while the person thinks
		<-ctx.Done()
		return "", ctx.Err()
	}))
	if _, _, err := collect(m, ctx, req); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}

	desk.Attach(askerFunc(func(context.Context, Question) (string, error) {
		return strings.Repeat("x", MaxAnswerBytes+1), nil
	}))
	if text, _, err := collect(m, context.Background(), req); err == nil || text != "" {
		t.Errorf("too long: text %d bytes, err %v", len(text), err)
	}
}
