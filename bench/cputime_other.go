//go:build !unix

package bench

import "time"

// CPUTime returns 0 where the process CPU time is not available.
func CPUTime() time.Duration { return 0 }
