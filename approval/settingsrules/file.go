package settingsrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"

	"github.com/agentpool/agentpool/internal/bounded"
)

// permissions is what a settings file's permissions hold for this
// package; other keys are kept by Save, not read.
type permissions struct {
	Allow []string `json:"allow"`
	Ask   []string `json:"ask"`
	Deny  []string `json:"deny"`
}

func (p permissions) list(name string) []string {
	switch name {
	case Allow:
		return p.Allow
	case Ask:
		return p.Ask
	}
	return p.Deny
}

// readFile reads one settings file within budget; nil data and no error
// when it does not exist.
func readFile(budget *bounded.Budget, path string) ([]byte, error) {
	data, err := budget.ReadFile(path)
	var bound *bounded.Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.As(err, &bound), errors.Is(err, bounded.ErrNotRegular):
		return nil, fmt.Errorf("%s: %w", path, err)
	case err != nil:
		return nil, err // an *fs.PathError names the file
	}
	if err := budget.CheckJSON(data); err != nil {
		if b, ok := err.(*bounded.Error); ok {
			return nil, fmt.Errorf("%s:%d: %w", path, b.Line, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// parsePermissions decodes the permissions of a settings file; the error
// names the file, the line and the field.
func parsePermissions(path string, data []byte) (permissions, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return permissions{}, nil // an empty file is no settings yet
	}
	var doc struct {
		Permissions *permissions `json:"permissions"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return permissions{}, jsonError(path, data, err)
	}
	if doc.Permissions == nil {
		return permissions{}, nil
	}
	return *doc.Permissions, nil
}

// jsonError makes a decoding error read "file:line: field: message".
func jsonError(path string, data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("%s:%d: invalid JSON: %v", path, lineAt(data, syn.Offset), syn)
	case errors.As(err, &typ):
		want := "a rule string" // an entry of a list
		switch typ.Type.Kind() {
		case reflect.Slice:
			want = "a list of rule strings"
		case reflect.Struct, reflect.Pointer:
			want = "an object"
		}
		if typ.Field == "" {
			return fmt.Errorf("%s:%d: a settings file must be a JSON object, got a JSON %s", path, lineAt(data, typ.Offset), typ.Value)
		}
		return fmt.Errorf("%s:%d: %s: expected %s, got a JSON %s", path, lineAt(data, typ.Offset), typ.Field, want, typ.Value)
	}
	return fmt.Errorf("%s: %w", path, err)
}

func lineAt(data []byte, offset int64) int {
	offset = min(max(offset, 0), int64(len(data)))
	return 1 + bytes.Count(data[:offset], []byte("\n"))
}

// member is one key of a JSON object, with its value as written.
type member struct {
	key string
	val json.RawMessage
}

// decodeObject reads a JSON object keeping its keys in order.
func decodeObject(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil {
		return nil, err
	} else if tok != json.Delim('{') {
		return nil, fmt.Errorf("expected a JSON object, got %v", tok)
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		out = append(out, member{key, val})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return out, nil
}

// encodeObject writes members as a JSON object, indented by two spaces.
func encodeObject(ms []member) ([]byte, error) {
	var flat bytes.Buffer
	flat.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			flat.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		flat.Write(k)
		flat.WriteByte(':')
		flat.Write(m.val)
	}
	flat.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, flat.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// set replaces the value of key, or appends it.
func set(ms []member, key string, val json.RawMessage) []member {
	for i := range ms {
		if ms[i].key == key {
			ms[i].val = val
			return ms
		}
	}
	return append(ms, member{key, val})
}

func get(ms []member, key string) (json.RawMessage, bool) {
	for _, m := range ms {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// addRule returns the settings document data with text added to
// permissions.<list>; changed is false when it is there already.
func addRule(path string, data []byte, list, text string) (out []byte, changed bool, err error) {
	perms, err := parsePermissions(path, data) // the shape Claude Code reads, or an error
	if err != nil {
		return nil, false, err
	}
	for _, have := range perms.list(list) {
		if have == text || have == text+"(*)" {
			return data, false, nil
		}
	}
	var top []member
	if len(bytes.TrimSpace(data)) > 0 {
		if top, err = decodeObject(data); err != nil {
			return nil, false, fmt.Errorf("%s: %w", path, err)
		}
	}
	var pm []member
	if raw, ok := get(top, "permissions"); ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if pm, err = decodeObject(raw); err != nil {
			return nil, false, fmt.Errorf("%s: permissions: %w", path, err)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // a rule reads as written: Bash(a && b:*)
	if err := enc.Encode(append(perms.list(list), text)); err != nil {
		return nil, false, err
	}
	pm = set(pm, list, bytes.TrimSpace(buf.Bytes()))
	pv, err := encodeObject(pm)
	if err != nil {
		return nil, false, err
	}
	top = set(top, "permissions", pv)
	out, err = encodeObject(top)
	return out, true, err
}

// writeAtomic replaces path with data: a temporary file in the same
// directory, synced, then renamed over it. A new file gets mode 0600, an
// existing one keeps its mode; a symbolic link is followed.
func writeAtomic(path string, data []byte) (err error) {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
