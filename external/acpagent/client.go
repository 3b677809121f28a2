package acpagent

import (
	"context"

	acp "github.com/coder/acp-go-sdk"
)

// client is what the agent calls on us (acp.Client): each call is routed
// to the turn of its session; a session with no prompt in progress gets
// an error (a late notification is dropped).
type client struct{ a *agentConn }

var _ acp.Client = client{}

func (c client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	if t, ok := c.a.turn(n.SessionId); ok {
		t.update(n.Update)
	}
	return nil
}

func (c client) RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	t, ok := c.a.turn(req.SessionId)
	if !ok {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
	}
	return t.permission(ctx, req), nil
}

func (c client) ReadTextFile(ctx context.Context, req acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	t, err := c.fileTurn(req.SessionId)
	if err != nil {
		return acp.ReadTextFileResponse{}, err
	}
	return t.readFile(ctx, req)
}

func (c client) WriteTextFile(ctx context.Context, req acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	t, err := c.fileTurn(req.SessionId)
	if err != nil {
		return acp.WriteTextFileResponse{}, err
	}
	return t.writeFile(ctx, req)
}

// fileTurn is the turn a file request belongs to; the request is refused
// when the member may not use files (the capability was not offered) or
// no prompt is in progress in the session.
func (c client) fileTurn(sid acp.SessionId) (*turn, error) {
	if !c.a.n.cfg.AllowFileOperations {
		return nil, acp.NewMethodNotFound("fs (allow_file_operations is off for agent " + c.a.n.cfg.Name + ")")
	}
	t, ok := c.a.turn(sid)
	if !ok {
		return nil, acp.NewInvalidParams(map[string]any{"error": "no prompt is in progress in session " + string(sid)})
	}
	return t, nil
}
