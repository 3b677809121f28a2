// Package mcprelay relays the Model Context Protocol from stdio to a
// streamable HTTP endpoint on loopback: it is `agentpool mcp-relay`, the
// program an external ACP agent that takes MCP servers over stdio only
// (no mcpCapabilities.http in its initialize) is told to start, so that
// it reaches the tools agentpool serves to it (package acpagent's
// ServedName server) all the same.
//
// Guarantees:
//
//   - Only an http URL whose host is a loopback address or "localhost"
//     is relayed to (Check); no proxy, no redirect is followed.
//   - Each newline-delimited JSON-RPC message read from stdin is POSTed
//     to the URL as MCP's streamable HTTP transport says (Accept of JSON
//     and event streams, the Mcp-Session-Id the server gave, the
//     MCP-Protocol-Version negotiated by initialize or carried in the
//     message's _meta); each JSON-RPC message of the answer (a JSON body,
//     or every event of an event stream) is written to stdout as one
//     line. Requests run concurrently (MaxInFlight at once: reading
//     waits beyond), and stdout writes are whole lines, one at a time.
//   - Bounded: a message read over MaxMessage bytes, and an answer over
//     MaxAnswer bytes, are not relayed; a request whose relay fails (the
//     bound, the connection, an HTTP error status such as 404 once the
//     delegation served has ended) gets a JSON-RPC error answer with its
//     id, so that the agent's MCP client never waits for nothing.
//   - Run returns when stdin ends (the agent closed it, or exited), when
//     its context ends, or when the parent process is gone (the parent
//     pid changed: the agent died without closing our stdin); the
//     requests in flight are then cancelled and waited for, and the
//     server's MCP session, if it gave one, is ended (DELETE).
package mcprelay
