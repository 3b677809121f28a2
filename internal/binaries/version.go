package binaries

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Set at build time with -ldflags "-X
// github.com/agentpool/agentpool/internal/binaries.Commit=..." (and Date):
// a release build (goreleaser) names its commit and its build date. Left
// empty, they come from what go build records of the checkout
// (debug.ReadBuildInfo: vcs.revision, vcs.time, vcs.modified), which a
// build outside a git checkout, or with -buildvcs=false, lacks.
var (
	Commit string
	Date   string // the build date, RFC 3339
)

// VersionText is what `agentpool version` prints, the same in every
// program: the version, the commit and its date (or the build date), and
// the Go release and platform it was built with.
//
//	agentpool 0.1.0-dev
//	commit:    0123abcd... (with uncommitted changes)
//	committed: 2025-01-02T03:04:05Z
//	go:        go1.26.8 linux/amd64
func VersionText() string {
	return versionText(debug.ReadBuildInfo())
}

func versionText(info *debug.BuildInfo, ok bool) string {
	version, commit, date, dateLabel := Version, Commit, Date, "built:    "
	var modified bool
	if ok {
		// `go install github.com/agentpool/agentpool/cmd/...@v1.2.3`
		// records the module's version; a build in a checkout records
		// "(devel)" or a pseudo-version no one chose.
		if v := info.Main.Version; version == defaultVersion && v != "" && v != "(devel)" {
			version = strings.TrimPrefix(v, "v")
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if commit == "" {
					commit = s.Value
				}
			case "vcs.time":
				if date == "" {
					date, dateLabel = s.Value, "committed:"
				}
			case "vcs.modified":
				modified = s.Value == "true" && Commit == ""
			}
		}
	}
	if commit == "" {
		commit = "unknown (built without version control information)"
	} else if modified {
		commit += " (with uncommitted changes)"
	}
	var b strings.Builder
	b.WriteString(Front + " " + version + "\n")
	b.WriteString("commit:    " + commit + "\n")
	if date != "" {
		b.WriteString(dateLabel + " " + date + "\n")
	}
	b.WriteString("go:        " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n")
	return b.String()
}
