package config

import (
	"errors"
	"io/fs"

	"github.com/agentpool/agentpool/internal/bounded"
)

// bound reports a bound of the budget that a document passed, at the line
// of the node that passed it (in the file that holds it: a line marked
// with fileLineBase names an INHERIT file). The manifest is then refused
// without further checks: what is left of it would only bring issues
// that follow from the refusal.
func (p *parser) bound(err error) {
	p.refused = true
	var be *bounded.Error
	if errors.As(err, &be) {
		p.add(be.Line, "", "%s", be.Error())
		return
	}
	p.add(0, "", "%v", err)
}

// readProblem is what went wrong reading a file, without the path the
// message names already: the cause of an *fs.PathError, else err itself.
// A bound of the budget (which says which) refuses the manifest, as in
// bound.
func (p *parser) readProblem(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var be *bounded.Error
	if errors.As(err, &be) {
		p.refused = true
	}
	return err
}
