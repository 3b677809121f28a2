//go:build !unix

package files

// nonblockFlag makes opening a FIFO return at once (no FIFOs here).
const nonblockFlag = 0
