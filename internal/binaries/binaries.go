package binaries

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Version is the version every program prints; set at build time with
// -ldflags "-X github.com/agentpool/agentpool/internal/binaries.Version=...".
var Version = defaultVersion

// defaultVersion is Version when the build sets none.
const defaultVersion = "0.1.0-dev"

// The programs' file names.
const (
	Front = "agentpool"
	Light = "agentpool-light"
	Full  = "agentpool-full"
)

// Marks set in the environment of an exec from one program to another, so
// that a file by the expected name that is not the expected program (it
// would exec itself for ever) is reported instead. The program started
// removes its mark at once (cli.Main), so the processes its
// commands start do not inherit it.
const (
	// EnvFromFront: set by agentpool in the command line's environment.
	EnvFromFront = "AGENTPOOL_EXECED_FROM_FRONT"
	// EnvFromLight: set by agentpool-light in agentpool-full's.
	EnvFromLight = "AGENTPOOL_EXECED_FROM_LIGHT"
)

// Find looks for the first of names next to the running executable
// (symbolic links resolved, so that a link to an installed agentpool finds
// the programs installed with it), then for the first of them on PATH. The
// error says where it looked.
func Find(names ...string) (string, error) {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	dir := ""
	if err == nil {
		dir = filepath.Dir(self)
		for _, name := range names {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	if dir == "" {
		return "", fmt.Errorf("it is not on PATH, and the running executable is unknown (%v)", err)
	}
	return "", fmt.Errorf("it is neither in %s nor on PATH", dir)
}
