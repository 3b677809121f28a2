package proctree

import "math/rand/v2"

// fillRandom fills b from math/rand/v2's global generator (seeded by the
// runtime from the kernel's entropy). Cgroup names and tree marks must not
// collide with another process's, and need not be secret: a process that
// could read them could read /proc anyway. crypto/rand would bring the
// crypto packages into the pool for no gain.
func fillRandom(b []byte) {
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
}
