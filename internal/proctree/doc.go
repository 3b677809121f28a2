// Package proctree starts a command as the root of a process tree and
// ends the whole tree: the command, its children, and what they leave
// behind, those that left its process group and session (setsid, a
// daemon's double fork) included. The shell tools, the command hooks and
// the stdio MCP servers start their processes with it.
//
//	t := proctree.New(cmd) // cmd not started; a CommandContext's Cancel kills the tree
//	err := t.Start()
//	err = t.Wait()         // the root (exec.Cmd.Wait)
//	err = t.End()          // SIGKILL what is left, wait, reap, free
//
// Signal (SIGTERM to all, for a grace period), Kill (SIGKILL to all, no
// wait) and Alive (a process of the tree runs; zombies do not count) are
// there for callers that end a tree in steps.
//
// # Linux: a cgroup per tree
//
// When this process may write to the cgroup v2 hierarchy (the "unified"
// one of a hybrid system included) and the kernel has cgroup.kill (5.14)
// and clone3 into a cgroup (5.7), each tree is a cgroup,
// agentpool-PID-RANDOM/tN beside this process's own cgroup. The root is
// born in it (clone3 CLONE_INTO_CGROUP: there is no moment when it or a
// child could fork outside), every descendant stays in it whatever it
// does (setsid, double fork, reparenting), and End writes cgroup.kill:
// the kernel kills every process of the cgroup, those forking meanwhile
// included, and the cgroup is removed once none runs. The directory goes
// with the last tree; one left by an agentpool process that was killed
// is removed by the next one, if empty.
//
// # Linux otherwise: the subreaper and a walk of /proc
//
// Without a usable cgroup (cgroup v1 only, a read-only or foreign
// hierarchy, an older kernel, or SetCgroups(false)), a tree's processes
// are found in /proc: the descendants of the root, and of every process
// whose environment carries the tree's mark (AGENTPOOL_PROCESS_TREE,
// inherited by everything the root starts). A process that escaped (its
// parent exited) is found by its mark: among this process's children when
// it is a subreaper (BecomeSubreaper), else among all processes. Signals
// go through pidfds, after a check that the pid still names the process
// that was found (start time), so a reused pid is never signalled. End
// repeats the walk and SIGKILL until none runs.
//
// # The subreaper
//
// BecomeSubreaper makes this process a child subreaper: what is orphaned
// below it is reparented to it instead of init, and its zombies are
// reaped by a goroutine at every SIGCHLD. It never reaps a tree's root
// (the tree's exec.Cmd waits for that one; a tree's Start keeps the
// reaper out until the child is registered), and, with ReapTrees, only
// processes attributed to a tree (by their cgroup, or seen by the walk).
// The agentpool CLI holds it with ReapAll for its whole life (run, serve,
// worker); a program using the pool sets pool.Options.Subreaper.
//
// # Limits
//
//   - Without a usable cgroup, a process that clears its environment
//     (env -i) and escapes before a walk sees it is not found; nor is one
//     whose environment this process may not read (another user's, a
//     setuid program's). Without the subreaper either, nor is an escaped
//     process reparented to another subreaper than init.
//   - A walk-mode process that escaped, then exited before any walk saw
//     it, stays a zombie child of a ReapTrees subreaper (ReapAll reaps
//     it). Without /proc the walk reaches the root's process group only.
//   - When this process itself is SIGKILLed nothing runs its Ends: the
//     trees survive it (stdio MCP servers get SIGKILL as their
//     parent-death signal).
//   - Outside Linux a tree is its root's process group: a process that
//     leaves the group escapes, and BecomeSubreaper returns
//     errors.ErrUnsupported. Outside Unix it is the root process alone.
package proctree
