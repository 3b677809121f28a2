// Package member holds what the pool nodes of external agents (packages
// acpagent, a2aagent and aguiagent) do alike with the child session a
// delegation gives them: keep a message of its transcript, and end its
// run failed or aborted with the run_error event front ends show; and the
// bounded reader of server-sent events the A2A and AG-UI clients share.
//
// Guarantees: a message that cannot be stored is logged, never lost
// without a word, and is written even when the delegation's context is
// cancelled (the transcript of a cancelled child is kept); an aborted run
// says whether it was cancelled or timed out (codes "aborted" and
// "timeout", spawn.ErrTimeout).
package member
