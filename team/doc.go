// Package team runs several nodes as one: a parallel team runs every member
// at once, a sequential team feeds each member's final output to the next.
//
// A team is a spawn.Node with its own session; every member runs in its own
// child session of the team's session (never of the caller's), through the
// one spawn primitive with mechanism "spawn". A team emits run_started, then
// its members' (wrapped) events, then stream_complete with the combined
// output or run_error. Run returns only after every member has ended.
//
// Before it starts any member, a team takes one spawn per member from the
// run's budget (spawn.Reserve): it runs all of its members or none, and when
// none can start each is a spawn_refused event and the team fails. A member
// that fails or cannot start is a failed member: with RequireAll a
// sequential team stops there and a parallel one (whose members all run to
// their end) fails; without it a team fails only when every member failed,
// and its output names the members that did.
//
// A team whose run stopped while a member waited for a person's answer
// goes on (spawn.Continuation): members that ended keep their results, the
// waiting one goes on, a sequential team runs the members after it, and a
// parallel team's member that never started counts as failed.
package team
