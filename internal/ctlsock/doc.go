// Package ctlsock is the control socket of an agentpool process: a Unix
// socket through which another agentpool process of the same user on the
// same host asks it to act on a session it runs (today: cancel one
// session, `agentpool sessions cancel` across processes).
//
// Guarantees:
//
//   - Confinement: sockets live in one directory per user
//     ($XDG_RUNTIME_DIR/agentpool, else agentpool-UID in the temporary
//     directory), created 0700 and refused when it is a symlink, is not a
//     directory, is another user's, or is open to others. Each socket is
//     named after its process id (Path), made 0600 and removed on Close.
//   - Bounds: one request per connection, one JSON line of at most 4 KiB;
//     a connection that does not send it within 10 s is closed; at most 8
//     requests are handled at once (others wait for a slot until their
//     deadline).
//   - A process whose id another process took later answers for itself: a
//     request for a session it does not run is answered with an error,
//     never acted on elsewhere.
//   - Close stops accepting, cancels the handlers' context, waits for
//     them and removes the socket.
package ctlsock
