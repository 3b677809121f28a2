package sessiontree

import "github.com/agentpool/agentpool/event"

// spawnInfo is what the projection knows of a child it shows: from its
// spawn_session_start, or less of it from a reactive fallback. How a
// session ends (session.Ending) and the record of a child the store lacks
// (session.ChildRecord) are the session package's, shared with the
// recorder.
type spawnInfo struct {
	child, toolCallID, sourceName        string
	mechanism                            event.Mechanism
	runMode                              event.RunMode
	sourceType                           event.SourceType
	description, prompt, modelID, taskID string
	depth                                int
}
