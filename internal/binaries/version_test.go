package binaries

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionText(t *testing.T) {
	goLine := "go:        " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	vcs := func(mainVersion string, kv ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/agentpool/agentpool", Version: mainVersion}}
		for i := 0; i < len(kv); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return info
	}
	checkout := vcs("(devel)", "vcs", "git", "vcs.revision", "0123abcd", "vcs.time", "2025-01-02T03:04:05Z", "vcs.modified", "true")
	for _, c := range []struct {
		name                  string
		version, commit, date string // the -ldflags -X values
		info                  *debug.BuildInfo
		ok                    bool
		want                  string
	}{
		{"a checkout with changes", defaultVersion, "", "", checkout, true,
			"agentpool 0.1.0-dev\ncommit:    0123abcd (with uncommitted changes)\ncommitted: 2025-01-02T03:04:05Z\n"},
		{"a clean checkout", defaultVersion, "", "", vcs("(devel)", "vcs.revision", "0123abcd", "vcs.time", "2025-01-02T03:04:05Z", "vcs.modified", "false"), true,
			"agentpool 0.1.0-dev\ncommit:    0123abcd\ncommitted: 2025-01-02T03:04:05Z\n"},
		{"-ldflags win", "1.2.3", "feedbeef", "2026-02-03T04:05:06Z", checkout, true,
			"agentpool 1.2.3\ncommit:    feedbeef\nbuilt:     2026-02-03T04:05:06Z\n"},
		{"go install @version", defaultVersion, "", "", vcs("v0.4.0"), true,
			"agentpool 0.4.0\ncommit:    unknown (built without version control information)\n"},
		{"no build information", defaultVersion, "", "", nil, false,
			"agentpool 0.1.0-dev\ncommit:    unknown (built without version control information)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			saved := [3]string{Version, Commit, Date}
			defer func() { Version, Commit, Date = saved[0], saved[1], saved[2] }()
			Version, Commit, Date = c.version, c.commit, c.date
			if got := versionText(c.info, c.ok); got != c.want+goLine {
				t.Errorf("got\n%s\nwant\n%s", got, c.want+goLine)
			}
		})
	}
	if got := VersionText(); !strings.HasPrefix(got, Front+" ") || !strings.HasSuffix(got, goLine) {
		t.Errorf("this binary's: %q", got)
	}
}
