//go:build !linux

package proctree

import "errors"

// BecomeSubreaper: only Linux has child subreapers; it returns
// errors.ErrUnsupported and a release that does nothing.
func BecomeSubreaper(Policy) (release func(), err error) {
	return func() {}, errors.ErrUnsupported
}

// SetCgroups: only Linux trees use cgroups; it does nothing.
func SetCgroups(bool) (was bool) { return false }
