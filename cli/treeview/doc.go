// Package treeview is the live status tree of a run: one line per running
// session, drawn as a tree so that parallel siblings' children sit under
// their own parent, with finished children collapsed to one summary line
// and large fan-outs counted instead of listed.
//
// The tree is a pure state struct, [Model], updated by the events of one
// stream ([Model.Apply]) and drawn by [Model.Render] for a given instant and
// spinner frame. Nothing in it reads a clock or a terminal, so frames can be
// compared with golden files in tests. [Live] is the thin bubbletea program
// around it: it only feeds events in (tea.Program.Send from the event sink)
// and ticks for the spinner and elapsed times; `agentpool sessions tree`
// draws a stored session's replayed stream with the same renderer, and
// [Watch] redraws it while another process runs it (`--watch`).
//
// A frame's only escape sequences are the renderer's own (colours, and
// bubbletea's cursor moves around it): every text it draws that came from
// the events (session, agent and tool names, errors, ids, the root's
// answer) goes through internal/termtext, so that a control sequence in
// model or tool output is shown, never acted on by the terminal.
package treeview
