package bounded

import (
	"errors"
	"io"
	"io/fs"
	"syscall"
)

// ErrNotRegular is the error of a path that is no regular file: a named
// pipe, device or socket, which could block a read or never end.
var ErrNotRegular = errors.New("not a regular file")

// ReadFile reads the file at path within the budget: at most the per-file
// bound and what is left of the total, and only when the budget has a file
// left. A file over a bound is an *Error, read no further than the bound;
// a directory is syscall.EISDIR and any other file that is not regular
// ErrNotRegular, both in an *fs.PathError, as open errors are.
func (b *Budget) ReadFile(path string) ([]byte, error) {
	if err := b.refuse(0, false); err != nil {
		return nil, err
	}
	f, err := openNoDelay(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	switch mode := fi.Mode(); {
	case mode.IsDir():
		return nil, &fs.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	case !mode.IsRegular():
		return nil, &fs.PathError{Op: "read", Path: path, Err: kindError(mode)}
	}
	if err := b.refuse(fi.Size(), false); err != nil {
		return nil, err
	}
	// The file may have grown since Stat: read one byte past the room
	// left to tell.
	room := min(b.lim.FileBytes, b.lim.TotalBytes-b.bytes)
	data, err := io.ReadAll(io.LimitReader(f, room+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if err := b.refuse(int64(len(data)), true); err != nil {
		return nil, err
	}
	b.files++
	b.bytes += int64(len(data))
	return data, nil
}

// kindError says which kind of file that is not regular mode is.
func kindError(mode fs.FileMode) error {
	kind := "an irregular file"
	switch {
	case mode&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case mode&fs.ModeSocket != 0:
		kind = "a socket"
	case mode&fs.ModeDevice != 0:
		kind = "a device"
	}
	return &kindErr{kind}
}

type kindErr struct{ kind string }

func (e *kindErr) Error() string { return ErrNotRegular.Error() + " (" + e.kind + ")" }
func (e *kindErr) Unwrap() error { return ErrNotRegular }
