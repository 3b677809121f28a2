package servertest

import (
	"context"
	"iter"
	"regexp"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
)

// Started is what a model of SteerRegistry reports when a session first
// asks it: the session and its agent.
type Started struct{ Session, Agent string }

// SteerRegistry returns a registry with the offline models and two model
// types for tests of steering one child (docs/control.md), which wait on
// signals rather than on time:
//
//   - `blocking`: as in BlockingRegistry, it reports the session on
//     started and streams nothing until the session is cancelled;
//   - `gated`: at a session's first request it reports the session on
//     started, waits for release to be closed (or the session to end),
//     and answers "<agent> first"; at any later request (a message the
//     session got meanwhile) it answers "<agent> got: <the last message>".
func SteerRegistry(started chan<- Started, release <-chan struct{}) *pool.Registry {
	return pool.NewRegistry().
		AddModel("blocking", func(config.ModelSpec) (model.Model, error) { return steerBlocking{started}, nil }).
		AddModel("gated", func(config.ModelSpec) (model.Model, error) { return gated{started, release}, nil })
}

type steerBlocking struct{ started chan<- Started }

func (steerBlocking) ID() string { return "blocking" }

func (b steerBlocking) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		select {
		case b.started <- startedOf(ctx, req):
		case <-ctx.Done():
		}
		<-ctx.Done()
		yield(model.Chunk{}, context.Cause(ctx))
	}
}

type gated struct {
	started chan<- Started
	release <-chan struct{}
}

func (gated) ID() string { return "gated" }

func (g gated) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		who := startedOf(ctx, req)
		answered := false
		for _, m := range req.Messages {
			answered = answered || m.Role == model.RoleAssistant
		}
		text := who.Agent + " first"
		if answered {
			text = who.Agent + " got: " + req.Messages[len(req.Messages)-1].Text()
		} else {
			select {
			case g.started <- who:
			case <-ctx.Done():
			}
			select {
			case <-g.release:
			case <-ctx.Done():
				yield(model.Chunk{}, context.Cause(ctx))
				return
			}
		}
		if !yield(model.Chunk{Kind: model.ChunkText, Text: text}, nil) {
			return
		}
		yield(model.Chunk{Kind: model.ChunkFinish, FinishReason: model.FinishStop}, nil)
	}
}

// memberPrompt finds the agent's name in a system prompt of
// SteerTeamYAML, for a model that runs where no invocation is in its
// context (a Temporal worker's activity).
var memberPrompt = regexp.MustCompile(`You are member (\w+)\.`)

// startedOf says who asks: the invocation's session and agent, else (on
// an engine's worker) the agent its system prompt names, without a
// session (ResolveMembers finds it).
func startedOf(ctx context.Context, req *model.Request) Started {
	if inv := spawn.InvocationFrom(ctx); inv != nil {
		return Started{inv.Session.ID, inv.Session.AgentName}
	}
	if m := memberPrompt.FindStringSubmatch(req.System); m != nil {
		return Started{Agent: m[1]}
	}
	return Started{}
}
