//go:build unix

package files

import "syscall"

// nonblockFlag makes opening a FIFO return at once.
const nonblockFlag = syscall.O_NONBLOCK
