// Package tailbuf keeps the end of a stream: the last bytes a child
// process wrote to its stderr, quoted when the process fails (an MCP
// server, an external ACP agent).
//
// Guarantees: a Buffer never holds more than its bound; it is safe for
// concurrent use (a reader goroutine writes while a failing call reads);
// String is valid UTF-8, starts at a line when the start was dropped
// (marked with "…"), and has no trailing line ends.
package tailbuf
