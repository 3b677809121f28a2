// Package compare runs the delegated call of agentpool's bench package side
// by side with the same work done by a peer framework, CloudWeGo eino's ADK
// (agent-as-tool), in one benchmark run, and prints both with their ratio.
//
// It is a separate module (with a replace directive pointing at the
// agentpool module) so that agentpool itself never depends on eino; `go
// test ./...` and `go vet ./...` in the agentpool module do not enter it.
//
// The eino side: a ChatModelAgent "parent" whose tool is the sub-agent
// "worker" wrapped with adk.NewAgentTool, with ToolsConfig.EmitInternalEvents
// so that the worker's events reach the parent's event stream (as agentpool
// forwards a child's events wrapped). Both agents run on fake chat models
// that answer from the conversation alone: the parent calls the worker once
// and then answers "finished"; the worker answers "done". Every event of
// the runner's iterator is consumed (message streams read to the end).
//
//	cd bench/compare && go test -run '^$' -bench . -benchmem
package compare
