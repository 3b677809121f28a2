package durable

import (
	"context"
	"testing"

	"github.com/agentpool/agentpool/hook/command"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

type notifying struct{ session.Store }

func (notifying) SubscribeEvents(context.Context) (<-chan string, error) { return nil, nil }

// The follower finds a store's notices (session.Notifier) through the
// wrappers the CLI puts around it (the one that deletes transcripts with
// their sessions).
func TestNotifierThroughWrappers(t *testing.T) {
	n := notifying{memory.New()}
	defer n.Close()
	if session.Notifier(command.CleanTranscripts(n, t.TempDir(), false)) == nil {
		t.Error("a wrapped notifying store is not seen as one")
	}
	if session.Notifier(command.CleanTranscripts(memory.New(), t.TempDir(), false)) != nil {
		t.Error("a wrapped store without notices is seen as notifying")
	}
}
