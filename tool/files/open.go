package files

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/agentpool/agentpool/tool/workspace"
)

// openRegular opens abs for reading through root and checks, on the open
// file, that it is a regular file. The open does not block (nonblockFlag),
// so a FIFO put in a file's place after it was looked at is refused, not
// waited on.
func openRegular(root *workspace.Root, abs string) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(abs, os.O_RDONLY|nonblockFlag, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file (%v)", info.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// readRegular returns the content of the regular file abs, read through
// root.
func readRegular(root *workspace.Root, abs string) ([]byte, error) {
	f, _, err := openRegular(root, abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// statFile returns the file's info, nil when it does not exist.
func statFile(root *workspace.Root, path string) (fs.FileInfo, error) {
	info, err := root.Stat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	return info, nil
}
