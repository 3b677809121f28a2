// Package wire holds the AG-UI wire types the server writes and reads: the
// one Event struct with its hand-written encoder (AppendJSON, AppendSSE; the
// fields of each event type in a fixed order, optional ones omitted), the
// event type names, the RunAgentInput request body and the entries of
// GET /agents and of the todo state. It is internal so that the server's
// public API stays New, Options and Server; the schemas are the AG-UI
// protocol's (docs/spec/PROTOCOLS.md, docs/agui.md).
package wire
