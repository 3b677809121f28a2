package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShippedManifests checks the manifests AgentPool itself ships (its
// docs and config resources), when AGENTPOOL_UPSTREAM_MANIFESTS names a
// directory of them (they are not copied here): each must load, or fail
// only with errors that say the feature is not supported (Python code,
// AgentPool integrations agentpool does not have) or, for a fragment
// without agents, that agents are missing.
func TestShippedManifests(t *testing.T) {
	dir := os.Getenv("AGENTPOOL_UPSTREAM_MANIFESTS")
	if dir == "" {
		t.Skip("AGENTPOOL_UPSTREAM_MANIFESTS is not set")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.y*ml"))
	if len(files) == 0 {
		t.Fatalf("no manifests in %s", dir)
	}
	for _, f := range files {
		m, err := Load(f)
		if err == nil {
			t.Logf("%s: loads (%d agents, %d teams, %d warnings)", filepath.Base(f), len(m.Agents), len(m.Teams), len(m.Warnings))
			continue
		}
		for _, is := range err.(*Error).Issues {
			ok := strings.Contains(is.Msg, "not supported") || is.Msg == "at least one agent is required"
			if !ok {
				t.Errorf("%s", is)
			} else {
				t.Logf("%s", is)
			}
		}
	}
}
