package sessiontree

import (
	"fmt"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// How a session ends, and the record of a child the store lacks. The
// recorder (package record) keeps its own copy of childRecord: the two
// must make the same record (the tests of both check its title).

// finishInfo is how a session ended.
type finishInfo struct {
	stop        event.StopReason
	err, output string
	usage       *event.Usage
	cost        float64
	durationMS  int64
	final       bool // the values are the session's final totals (spawn_session_end)
}

// endOf is the end a spawn_session_end reports, its stop reason settled.
func endOf(ev event.SpawnSessionEnd) finishInfo {
	f := finishInfo{stop: ev.StopReason, err: ev.Error, output: ev.LastAssistantMessage, usage: ev.Usage,
		cost: ev.Cost, durationMS: ev.DurationMS, final: true}
	f.settle()
	return f
}

// settle gives an end without a stop reason its own: completed, or error
// when it carries an error.
func (f *finishInfo) settle() {
	if f.stop == "" {
		f.stop = event.StopCompleted
		if f.err != "" {
			f.stop = event.StopError
		}
	}
}

// parentEnded is the end of a child ended because its parent ended first.
var parentEnded = finishInfo{stop: event.StopAborted, err: errParentEnded}

// errParentEnded is the error of a child ended because its parent ended
// first.
const errParentEnded = "parent session ended first"

type spawnInfo struct {
	child, toolCallID, sourceName        string
	mechanism                            event.Mechanism
	runMode                              event.RunMode
	sourceType                           event.SourceType
	description, prompt, modelID, taskID string
	depth                                int
}

// childRecord is the record of a child that is not in the store (the
// record spawn.Spawn would have written).
func childRecord(info spawnInfo, parentID string, now time.Time) session.Session {
	title := info.description
	if title == "" {
		title = info.sourceName
	}
	return session.Session{
		ID: info.child, ParentID: parentID, Depth: info.depth, AgentName: info.sourceName, SourceType: info.sourceType,
		Title: fmt.Sprintf("%s (@%s subagent)", title, info.sourceName), Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now,
	}
}
