package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
)

// newRegistry is what the command wires into its pools: everything
// agentpool ships (models, fetch, MCP, external agents, which reach the
// member's tools over stdio through this program's mcp-relay).
func newRegistry() *pool.Registry {
	reg := batteries.Registry()
	if exe, err := os.Executable(); err == nil {
		reg.SetExternal(batteries.ExternalWith([]string{exe, mcpRelayCmd}))
	}
	return reg
}

// manifestOptions check a manifest's model types against newRegistry.
func manifestOptions() config.Options { return batteries.ConfigOptions(newRegistry()) }

// manifestFiles are the names a manifest is discovered under in the
// current directory when no -c is given: agentpool's own name first, then
// the names of AgentPool's documentation (its quick start writes
// agents.yml; AgentPool itself finds a manifest through its `agentpool
// set` store, which agentpool does not have).
var manifestFiles = []string{"agentpool.yaml", "agentpool.yml", "agents.yml", "agents.yaml"}

// discoverManifest returns the one manifest file of the current directory
// ("" when there is none). Two of them are an error rather than a guess:
// running the other one's agents would be a silent surprise.
func discoverManifest() (string, error) {
	var found []string
	for _, name := range manifestFiles {
		if _, err := os.Stat(name); err == nil {
			found = append(found, name)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%s are all here: name the manifest to use with -c", strings.Join(found, " and "))
}

// loadManifest loads the manifest named by -c, else the one discovered in
// the current directory (manifestFiles), else the built-in demo.
func loadManifest(path string) (*config.Manifest, error) {
	if path == "" {
		var err error
		if path, err = discoverManifest(); err != nil {
			return nil, err
		}
	}
	if path == "" {
		return config.Default(), nil
	}
	return config.LoadWith(path, manifestOptions())
}

// isBuiltIn says whether loadManifest(path) loads the built-in demo.
func isBuiltIn(path string) bool { return manifestName(path) == builtInName }

const builtInName = "the built-in manifest"

// manifestName names the manifest loadManifest(path) loads, for messages.
func manifestName(path string) string {
	if path != "" {
		return path
	}
	if name, err := discoverManifest(); err == nil && name != "" {
		return name
	}
	return builtInName
}

// builtInNotice is what run says before it runs the built-in demo, so
// that nobody mistakes it for their own manifest's agents.
func builtInNotice() string {
	return "no manifest here (" + strings.Join(manifestFiles, ", ") + ") and no -c: running the built-in demo"
}
