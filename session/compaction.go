// The compacted view of a conversation (agent compaction: docs/control.md,
// Compaction).

package session

import (
	"github.com/agentpool/agentpool/model"
)

// MetaCompaction is the Metadata key of a session whose conversation was
// compacted: a map with "summary" (the summary's text) and
// "first_kept_message_id" (the id of the first stored message sent after
// the summary). The messages before it stay in the store; a run that goes
// on with the session is given CompactedHistory, the view its last
// request had, not the whole conversation.
const MetaCompaction = "compaction"

// SummaryPrefix begins the message that stands for the summarised turns.
const SummaryPrefix = "Summary of the earlier conversation (older turns were summarised to fit the model's context window; the original messages are kept in the session's store):\n\n"

// SummaryMessage is the message that stands for the summarised turns of a
// conversation, first in every request after a compaction.
func SummaryMessage(summary string) model.Message {
	return model.Message{Role: model.RoleUser, Synthetic: true, Parts: []model.Part{{Kind: model.PartText, Text: SummaryPrefix + summary}}}
}

// CompactionMeta is the value of MetaCompaction for a summary and the id
// of the first message kept after it.
func CompactionMeta(summary, firstKept string) map[string]any {
	return map[string]any{"summary": summary, "first_kept_message_id": firstKept}
}

// CompactedHistory is the conversation of s a provider takes (History):
// when s was compacted (MetaCompaction) and its first kept message is
// among msgs, the summary and the messages from that one on; else all of
// msgs.
func CompactedHistory(s Session, msgs []Message) []model.Message {
	c, _ := s.Metadata[MetaCompaction].(map[string]any)
	summary, _ := c["summary"].(string)
	first, _ := c["first_kept_message_id"].(string)
	if summary == "" || first == "" {
		return History(msgs)
	}
	for i := range msgs {
		if msgs[i].ID == first {
			return append([]model.Message{SummaryMessage(summary)}, History(msgs[i:])...)
		}
	}
	return History(msgs)
}
