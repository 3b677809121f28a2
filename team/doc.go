// Package team runs several nodes as one: a parallel team runs every member
// at once, a sequential team feeds each member's final output to the next.
//
// A team is a spawn.Node with its own session; every member runs in its own
// child session of the team's session (never of the caller's), through the
// one spawn primitive with mechanism "spawn". A team emits run_started, then
// its members' (wrapped) events, then stream_complete with the combined
// output or run_error. Run returns only after every member has ended.
package team
