// Package soak tells a test whether the long soak runs were asked for.
//
// A soak test repeats what a quicker test already checks, many more times
// or at a larger size, to find what only shows rarely (a kill that lands
// at an unlucky moment, an interleaving). `make test` runs each of them at
// its quick size; `make soak` sets AGENTPOOL_SOAK=1 and runs them at full
// size. Nothing a soak test checks is left out of the quick run: only the
// number of repetitions or the size changes.
package soak
