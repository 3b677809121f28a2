package migration

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Step is one migration: applying step Version takes a schema from version
// Version-1 to Version.
type Step struct {
	Version int
	Name    string // the file name
	SQL     string
}

// Load returns the steps in dir of fsys in order. It panics on a file name
// without its number or a gap in the numbers: the files are embedded in
// the binary, so either is a build mistake that every test shows. store
// names the store in those messages.
func Load(fsys fs.FS, dir, store string) []Step {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		panic(err)
	}
	var out []Step
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic(store + ": bad migration file name " + name)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			panic(err)
		}
		out = append(out, Step{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			panic(fmt.Sprintf("%s: migration %s out of sequence (want version %d)", store, m.Name, i+1))
		}
	}
	return out
}
