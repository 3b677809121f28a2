package soak

import "os"

// Env is the environment variable that asks for the soak runs.
const Env = "AGENTPOOL_SOAK"

// Enabled reports whether the soak runs were asked for (Env=1).
func Enabled() bool { return os.Getenv(Env) == "1" }

// Pick returns long when the soak runs were asked for, else quick.
func Pick[T any](quick, long T) T {
	if Enabled() {
		return long
	}
	return quick
}
