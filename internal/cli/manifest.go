package cli

import (
	"errors"
	"io/fs"
	"os"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
)

// newRegistry is what the command wires into its pools: everything
// agentpool ships (models, fetch, MCP).
func newRegistry() *pool.Registry { return batteries.Registry() }

// manifestOptions check a manifest's model types against newRegistry.
func manifestOptions() config.Options { return batteries.ConfigOptions(newRegistry()) }

// defaultManifestFile is used by run when it exists and no -c is given.
const defaultManifestFile = "agentpool.yaml"

// loadManifest loads the manifest named by -c, else ./agentpool.yaml when
// present, else the built-in default.
func loadManifest(path string) (*config.Manifest, error) {
	if path != "" {
		return config.LoadWith(path, manifestOptions())
	}
	if _, err := os.Stat(defaultManifestFile); err == nil {
		return config.LoadWith(defaultManifestFile, manifestOptions())
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return config.Default(), nil
}

// isBuiltIn says whether loadManifest(path) loads the built-in demo.
func isBuiltIn(path string) bool { return manifestName(path) == builtInName }

const builtInName = "the built-in manifest"

// manifestName names the manifest loadManifest(path) loads, for messages.
func manifestName(path string) string {
	if path != "" {
		return path
	}
	if _, err := os.Stat(defaultManifestFile); err == nil {
		return defaultManifestFile
	}
	return builtInName
}
