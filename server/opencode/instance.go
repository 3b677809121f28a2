package opencode

import (
	"net/http"
	"path/filepath"
	"strings"

	"github.com/agentpool/agentpool/internal/bounded"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/tool/mcp"
)

// The instance routes the OpenCode TUI and `opencode run` read when they
// start and while a session is open. Each answers with what the pool has
// (its providers, its MCP servers, the directory's git branch) or, for what
// the pool has no counterpart of (LSP servers, formatters, slash commands,
// provider log-in methods), the documented empty shape, so that the client
// starts and shows nothing rather than failing. docs/opencode.md lists
// every route with its status.

// instanceAPI serves the routes of the instance's surroundings: MCP,
// VCS, directories, the v2 location and the empty shapes.
type instanceAPI struct {
	*base
}

// handleMCP answers GET /mcp: the manifest's MCP servers by name. A server
// starts on the first use of its tools; until then it shows as disabled.
// Servers wired in other than by batteries (not an *mcp.Manager) have no
// status to show.
func (s *instanceAPI) handleMCP(w http.ResponseWriter, r *http.Request) {
	out := map[string]wire.MCPStatus{}
	if m, ok := s.pool.MCP().(*mcp.Manager); ok {
		for _, st := range m.Servers() {
			switch st.State {
			case mcp.StateConnected:
				out[st.Name] = wire.MCPStatus{Status: "connected"}
			case mcp.StateFailed:
				out[st.Name] = wire.MCPStatus{Status: "failed", Error: st.Error}
			default: // not started yet, or closed
				out[st.Name] = wire.MCPStatus{Status: "disabled"}
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// handleVcs answers GET /vcs: the branch checked out in the request's
// directory (read from .git/HEAD), or {} outside a git work tree.
func (s *instanceAPI) handleVcs(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, wire.VcsInfo{Branch: gitBranch(dirOrDefault(r, s.dir))})
}

// gitBranch is the branch name HEAD points at in dir or the nearest parent
// holding .git ("" when detached, absent or unreadable). HEAD is read
// within the configuration bounds: a named pipe or a huge file there is
// "unreadable", never waited for or read whole.
func gitBranch(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		head, err := bounded.New(bounded.Config).ReadFile(filepath.Join(d, ".git", "HEAD"))
		if err == nil {
			ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: refs/heads/")
			if !ok {
				return ""
			}
			return ref
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// handleDirectories answers GET /project/{projectID}/directories: the one
// directory the server serves.
func (s *instanceAPI) handleDirectories(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, []wire.ProjectDirectory{{Directory: dirOrDefault(r, s.dir)}})
}

func (s *instanceAPI) handleCapabilities(w http.ResponseWriter, r *http.Request) {
	// Background subagents are the task tool's run_in_background; the
	// TUI's "move a running subagent to the background" is not offered.
	writeJSON(w, http.StatusOK, wire.ExperimentalCapabilities{BackgroundSubagents: false})
}

func (s *instanceAPI) handleConsole(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, wire.ConsoleState{ConsoleManagedProviders: []string{}})
}

// emptyList and emptyObject answer the routes of things the pool has none
// of.
func emptyList(w http.ResponseWriter, r *http.Request)   { writeRaw(w, http.StatusOK, []byte("[]")) }
func emptyObject(w http.ResponseWriter, r *http.Request) { writeRaw(w, http.StatusOK, []byte("{}")) }

// location is the v2 API's LocationInfo of a request: the served directory
// and its project.
func (s *instanceAPI) location(r *http.Request) wire.LocationInfo {
	dir := s.v2Dir(r)
	return wire.LocationInfo{Directory: dir, Project: wire.LocationProject{ID: projectID(dir), Directory: dir}}
}

// v2Dir is the directory of a v2 API request (?location[directory]=),
// else that of a v1 request, else the server's.
func (s *instanceAPI) v2Dir(r *http.Request) string {
	if d := r.URL.Query().Get("location[directory]"); d != "" {
		return filepath.Clean(d)
	}
	return dirOrDefault(r, s.dir)
}

func (s *instanceAPI) handleLocation(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.location(r))
}

// handleEmptyV2List answers the v2 API's list routes of things the pool
// exposes through the v1 routes only (agents, providers, models) or has
// none of (integrations, references, skills, commands): an empty data list
// at the request's location.
func (s *instanceAPI) handleEmptyV2List(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, wire.V2List{Location: s.location(r), Data: []any{}})
}
