package bounded

import "fmt"

// Limits are the bounds of one load.
type Limits struct {
	// FileBytes bounds one file.
	FileBytes int64
	// TotalBytes bounds all the files read with one Budget together.
	TotalBytes int64
	// Files bounds how many files one Budget reads (repeats included).
	Files int
	// Depth bounds the nesting of one document: the root is level 1, an
	// alias counts the levels of what it stands for.
	Depth int
	// Nodes bounds the YAML nodes (aliases expanded) and JSON values (keys
	// included) of all the documents checked with one Budget.
	Nodes int64
	// AliasNodes bounds the YAML nodes reached through aliases, over all
	// the documents checked with one Budget.
	AliasNodes int64
}

// Config are the bounds of configuration files: a manifest with every
// file it reads, a list of hook settings files, one SKILL.md. Real
// manifests are a few kilobytes, with a few hundred nodes; yaml.v3 needs
// about 200 bytes per node, so a file at the bound costs tens of MB while
// it is parsed, and the nodes a load may keep stay under 50 MB.
var Config = Limits{
	FileBytes:  1 << 20,
	TotalBytes: 4 << 20,
	Files:      64,
	Depth:      100,
	Nodes:      250_000,
	AliasNodes: 100_000,
}

// Bound names a limit that was hit.
type Bound string

// The bounds of Limits, and the refusals that are no number.
const (
	FileBytes  Bound = "file size"
	TotalBytes Bound = "total size"
	Files      Bound = "file count"
	Depth      Bound = "nesting depth"
	Nodes      Bound = "node count"
	AliasNodes Bound = "alias expansion"
	AliasCycle Bound = "alias cycle"
)

// Error is a bound that was hit.
type Error struct {
	// Line is the 1-based line of the node where the bound was passed in
	// the document checked, 0 for a whole file.
	Line  int
	Bound Bound
	Limit int64
	msg   string
}

// Error says what was found and which limit it passed, without the file
// name (the caller's to add, with Line).
func (e *Error) Error() string { return e.msg }

func errorf(line int, b Bound, limit int64, format string, args ...any) *Error {
	return &Error{Line: line, Bound: b, Limit: limit, msg: fmt.Sprintf(format, args...)}
}

// Budget is what one load may still spend of its Limits. It is not safe
// for concurrent use.
type Budget struct {
	lim        Limits
	bytes      int64
	files      int
	nodes      int64
	aliasNodes int64
}

// New returns the full budget of one load.
func New(lim Limits) *Budget { return &Budget{lim: lim} }

// Take counts a document of size bytes read by the caller (as if by
// ReadFile) and refuses it when it passes a bound.
func (b *Budget) Take(size int64) error {
	if err := b.refuse(size, false); err != nil {
		return err
	}
	b.files++
	b.bytes += size
	return nil
}

// refuse says which bound one more file of size bytes (at least size when
// atLeast: a read stopped at the bound) would pass; nil when none.
func (b *Budget) refuse(size int64, atLeast bool) error {
	is := "is"
	if atLeast {
		is = "has at least"
	}
	switch {
	case b.files >= b.lim.Files:
		return errorf(0, Files, int64(b.lim.Files), "too many files for one load (more than %d)", b.lim.Files)
	case size > b.lim.FileBytes:
		return errorf(0, FileBytes, b.lim.FileBytes, "file %s %d bytes, more than the limit of %d bytes per file", is, size, b.lim.FileBytes)
	case b.bytes+size > b.lim.TotalBytes:
		return errorf(0, TotalBytes, b.lim.TotalBytes, "file %s %d bytes, more than the %d bytes left of the limit of %d bytes for all the files of one load", is, size, b.lim.TotalBytes-b.bytes, b.lim.TotalBytes)
	}
	return nil
}
