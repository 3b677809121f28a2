package acp

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentpool/agentpool/tool/workspace"
)

// clientFS is the editor's file system (workspace.FS) for the runs of one
// ACP session: fs/read_text_file and fs/write_text_file, each only when
// the client advertised it in initialize (clientCapabilities.fs); the
// other goes to the disk. Paths are absolute and already confined by the
// file tools. Every request is bounded by the caller's context: a
// cancelled prompt or a client that fails gives the tool an error.
type clientFS struct {
	c           *conn
	session     string // the ACP session the requests name
	read, write bool   // what the client advertised
}

var _ workspace.FS = clientFS{}

type readTextFileParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Line      int    `json:"line,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

type writeTextFileParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Content   string `json:"content"`
}

// ReadTextFile asks the client for the file's text (its buffer, saved or
// not), or reads the disk when the client cannot read.
func (f clientFS) ReadTextFile(ctx context.Context, path string, line, limit int) (string, error) {
	if !f.read {
		return readDisk(path, line, limit)
	}
	var res struct {
		Content *string `json:"content"`
	}
	p := readTextFileParams{SessionID: f.session, Path: path, Line: max(line, 0), Limit: max(limit, 0)}
	if err := f.c.calls.call(ctx, f.session, methodReadTextFile, p, &res); err != nil {
		return "", clientError(methodReadTextFile, err)
	}
	if res.Content == nil {
		return "", errors.New("the editor's fs/read_text_file answer has no content")
	}
	return *res.Content, nil
}

// WriteTextFile asks the client to write the file (it lands in the
// editor, which saves it), or writes the disk when the client cannot.
func (f clientFS) WriteTextFile(ctx context.Context, path, content string) error {
	if !f.write {
		return writeDisk(path, content)
	}
	p := writeTextFileParams{SessionID: f.session, Path: path, Content: content}
	if err := f.c.calls.call(ctx, f.session, methodWriteTextFile, p, nil); err != nil {
		return clientError(methodWriteTextFile, err)
	}
	return nil
}

// clientError names the method of a failed client request.
func clientError(method string, err error) error {
	var rerr *rpcError
	if errors.As(err, &rerr) {
		return errors.New(method + ": the editor answered: " + rerr.Message)
	}
	return errors.New(method + ": " + err.Error())
}

// readDisk reads a text file from the disk, lines [line, line+limit) when
// line or limit is positive (1-based, as fs/read_text_file).
func readDisk(path string, line, limit int) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := string(b)
	if line <= 1 && limit <= 0 {
		return s, nil
	}
	lines := strings.SplitAfter(s, "\n")
	start := min(max(line-1, 0), len(lines))
	end := len(lines)
	if limit > 0 {
		end = min(start+limit, end)
	}
	return strings.Join(lines[start:end], ""), nil
}

// writeDisk replaces (or creates) a file atomically: a temporary file in
// the same directory, then a rename; an existing file keeps its mode.
func writeDisk(path, content string) (err error) {
	perm := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		perm = st.Mode().Perm()
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".agentpool-acp-*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.WriteString(content); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
