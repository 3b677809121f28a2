// Package mcp is agentpool's client of MCP (Model Context Protocol)
// servers: it exposes each configured server's tools as tool.Tools,
// through one tool.Toolset per server. The protocol is the official Go
// SDK's (github.com/modelcontextprotocol/go-sdk/mcp); this package adds
// the lifecycle, naming and failure handling a long-running agent runtime
// needs.
//
// # Lifecycle
//
// NewManager only validates the configurations. A server starts when its
// Toolset's Tools is first called: connect (a process for stdio, an HTTP
// session for sse and streamable-http), initialize and list the tools
// (following pagination), all within Options.StartTimeout. Concurrent
// callers share one start; a failed start is Tools' error (with the exit
// status and the last lines of a stdio server's stderr) and the next call
// tries again: failures are not cached. The tool list is cached; when the
// server sends notifications/tools/list_changed, the next Tools lists
// again. Manager.Servers reports each server's state ("not started",
// "connected", "failed", "closed"), last error and tool names.
//
// # Naming
//
// A tool is named mcp__<server>__<tool>, Claude Code's convention, which
// hook matchers such as `mcp__.*` rely on; characters of the MCP tool name
// outside [A-Za-z0-9_-] become '_' (server names are restricted to those).
// Its description and input schema are the server's (a missing schema
// becomes {"type":"object","properties":{}}); its kind is "read" when the
// server annotates it readOnlyHint, "other" otherwise; its title is the
// server's title for it, or "server: tool".
//
// # Calls and failures
//
// Each call has ServerConfig.Timeout (60s by default). Text contents are
// joined with newlines; structured content, when there is no text, is
// rendered as JSON; images and audio are described ("[image image/png,
// 1234 bytes]"), as are resource links and embedded resources (with the
// text of a text resource); the server's isError is Result.IsError, and
// Metadata names the server and the MCP tool. Failures never abort a run:
// they are error results "mcp server <name>: ...":
//
//   - the server answered with an error (unknown tool, a failing handler):
//     passed on; the server is alive and stays;
//   - the call timed out: reported; the server stays (it may only be
//     slow);
//   - the server is dead (EOF, process exited, garbage on stdout, an HTTP
//     answer that is not JSON-RPC, HTTP connection refused): its session
//     is dropped, the server restarted once and the call retried once. If
//     the retry fails too, the call's result is an error; the next call
//     starts the server again. Calls that fail on the same dead session
//     share one restart, and a call cut short by that end says why the
//     session ended.
//
// A server's garbage fails that server's calls only: each server has its
// own connection (process, HTTP transport), and what one connection may
// make the process hold is bounded: 16 MiB per stdio line and per
// server-sent event (the SDK's bounds) and per HTTP response body that is
// not an event stream (here: the SDK would read it whole), past which the
// body is not read further and the connection is dropped.
//
// Only the end of the caller's context is returned as an error.
//
// # No orphans
//
// A stdio server runs as a process tree (internal/proctree: on Linux a
// cgroup of its own where this process may make one, else the processes
// found by descent and by the tree's mark in their environment;
// elsewhere its process group) with, on Linux, SIGKILL as its
// parent-death signal (agentpool dying kills it). Whenever a server
// process exits, what is left of its tree is killed, on Linux what left
// its process group and session (setsid) included. Stopping a server
// (Close, or dropping a broken session) closes its stdin, waits a short
// grace, then SIGKILLs the tree and reaps the process. Manager.Close
// ends in-flight calls, stops every server, waits for all of it and may
// be called more than once; afterwards Tools and calls fail.
package mcp
