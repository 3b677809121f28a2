package opencode

import "github.com/agentpool/agentpool/server/opencode/internal/wire"

// Event properties.
type (
	connectedProps   struct{}
	sessionInfoProps struct {
		SessionID string       `json:"sessionID"`
		Info      wire.Session `json:"info"`
	}
	sessionStatusProps struct {
		SessionID string             `json:"sessionID"`
		Status    wire.SessionStatus `json:"status"`
	}
	sessionIDProps struct {
		SessionID string `json:"sessionID"`
	}
	sessionErrorProps struct {
		SessionID string `json:"sessionID"`
		Error     any    `json:"error" union:"MessageError"`
	}
	messageProps struct {
		SessionID string `json:"sessionID"`
		Info      any    `json:"info" union:"Message"`
	}
	partProps struct {
		SessionID string `json:"sessionID"`
		Part      any    `json:"part" union:"Part"`
		Time      int64  `json:"time"`
	}
	todoProps struct {
		SessionID string      `json:"sessionID" pattern:"^ses"`
		Todos     []wire.Todo `json:"todos"`
	}
	deltaProps struct {
		SessionID string `json:"sessionID"`
		MessageID string `json:"messageID"`
		PartID    string `json:"partID"`
		Field     string `json:"field"`
		Delta     string `json:"delta"`
	}
)
