package cli

import (
	"errors"
	"io/fs"
	"os"

	"github.com/agentpool/agentpool/config"
)

// defaultManifestFile is used by run when it exists and no -c is given.
const defaultManifestFile = "agentpool.yaml"

// loadManifest loads the manifest named by -c, else ./agentpool.yaml when
// present, else the built-in default.
func loadManifest(path string) (*config.Manifest, error) {
	if path != "" {
		return config.Load(path)
	}
	if _, err := os.Stat(defaultManifestFile); err == nil {
		return config.Load(defaultManifestFile)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return config.Default(), nil
}

// manifestName names the manifest loadManifest(path) loads, for messages.
func manifestName(path string) string {
	if path != "" {
		return path
	}
	if _, err := os.Stat(defaultManifestFile); err == nil {
		return defaultManifestFile
	}
	return "the built-in manifest"
}
