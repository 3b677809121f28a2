package readme

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/agentpool/agentpool/internal/binaries"
)

// goreleaser is the part of .goreleaser.yaml the release depends on.
type goreleaser struct {
	Version     int    `yaml:"version"`
	ProjectName string `yaml:"project_name"`
	Builds      []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		GOOS    []string `yaml:"goos"`
		GOARCH  []string `yaml:"goarch"`
		Flags   []string `yaml:"flags"`
		LDFlags []string `yaml:"ldflags"`
	} `yaml:"builds"`
	Archives []struct {
		IDs          []string `yaml:"ids"`
		Formats      []string `yaml:"formats"`
		NameTemplate string   `yaml:"name_template"`
		Files        []string `yaml:"files"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
	Snapshot struct {
		VersionTemplate string `yaml:"version_template"`
	} `yaml:"snapshot"`
	Changelog struct {
		Disable bool `yaml:"disable"`
	} `yaml:"changelog"`
	Release struct {
		GitHub struct {
			Owner string `yaml:"owner"`
			Name  string `yaml:"name"`
		} `yaml:"github"`
	} `yaml:"release"`
}

// The -X flags name variables of internal/binaries by their full path.
const binariesPkg = "github.com/agentpool/agentpool/internal/binaries"

var xFlag = regexp.MustCompile(`-X ` + regexp.QuoteMeta(binariesPkg) + `\.(\w+)=(\S+)`)

// TestReleaseBuildsTheThreePrograms: .goreleaser.yaml builds the three
// programs (the names internal/binaries finds) for linux and darwin on
// amd64 and arm64, without cgo, with -trimpath, and sets the version, the
// commit and the date `agentpool version` prints; one archive per
// platform holds all three. scripts/release.sh, make release's other path,
// builds the same.
func TestReleaseBuildsTheThreePrograms(t *testing.T) {
	var c goreleaser
	dec := yaml.NewDecoder(strings.NewReader(read(t, ".goreleaser.yaml")))
	dec.KnownFields(true) // a key this test does not know: keep the test in step
	if err := dec.Decode(&c); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if r := c.Release.GitHub; r.Owner+"/"+r.Name != "agentpool/agentpool" {
		t.Errorf("release.github %s/%s: want the module path's agentpool/agentpool", r.Owner, r.Name)
	}
	if c.Version != 2 || c.ProjectName != "agentpool" {
		t.Errorf("version %d, project_name %q: want 2 (goreleaser v2) and agentpool", c.Version, c.ProjectName)
	}
	// The variables -X sets must exist as strings (-X ignores a name that
	// does not exist): this reads them.
	vars := map[string]*string{"Version": &binaries.Version, "Commit": &binaries.Commit, "Date": &binaries.Date}
	wantX := map[string]string{"Version": "{{", "Commit": "{{", "Date": "{{"}
	programs := []string{binaries.Front, binaries.Light, binaries.Full}
	var built []string
	for _, b := range c.Builds {
		built = append(built, b.Binary)
		if b.ID != b.Binary || b.Main != "./cmd/"+b.Binary {
			t.Errorf("build %q: main %q, binary %q: want id = binary and main ./cmd/BINARY", b.ID, b.Main, b.Binary)
		}
		if !slices.Equal(b.GOOS, []string{"linux", "darwin"}) || !slices.Equal(b.GOARCH, []string{"amd64", "arm64"}) {
			t.Errorf("build %q: goos %v goarch %v: want [linux darwin] [amd64 arm64]", b.ID, b.GOOS, b.GOARCH)
		}
		if !slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Flags, "-trimpath") {
			t.Errorf("build %q: env %v flags %v: want CGO_ENABLED=0 and -trimpath", b.ID, b.Env, b.Flags)
		}
		ld := strings.Join(b.LDFlags, " ")
		if !strings.Contains(ld, "-s -w") {
			t.Errorf("build %q: ldflags %q lack -s -w", b.ID, ld)
		}
		set := map[string]bool{}
		for _, m := range xFlag.FindAllStringSubmatch(ld, -1) {
			if _, ok := vars[m[1]]; !ok {
				t.Errorf("build %q: -X sets binaries.%s, which `agentpool version` does not read", b.ID, m[1])
			}
			if !strings.HasPrefix(m[2], wantX[m[1]]) {
				t.Errorf("build %q: binaries.%s=%s is not a goreleaser template", b.ID, m[1], m[2])
			}
			set[m[1]] = true
		}
		for name := range vars {
			if !set[name] {
				t.Errorf("build %q: ldflags do not set binaries.%s", b.ID, name)
			}
		}
	}
	if !slices.Equal(built, programs) {
		t.Errorf("builds %v: want the three programs %v", built, programs)
	}
	if len(c.Archives) != 1 {
		t.Fatalf("%d archives: want one per platform, with the three programs", len(c.Archives))
	}
	a := c.Archives[0]
	if !slices.Equal(a.IDs, programs) || !slices.Equal(a.Formats, []string{"tar.gz"}) ||
		a.NameTemplate != "{{ .ProjectName }}_{{ .Version }}_{{ .Os }}_{{ .Arch }}" || !slices.Equal(a.Files, []string{"README.md"}) {
		t.Errorf("archive %+v: want the three programs and README.md in agentpool_VERSION_OS_ARCH.tar.gz", a)
	}
	if c.Checksum.NameTemplate != "{{ .ProjectName }}_{{ .Version }}_checksums.txt" || c.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum %+v: want sha256 in agentpool_VERSION_checksums.txt", c.Checksum)
	}

	// The snapshot version scripts/release.sh makes the same way.
	if c.Snapshot.VersionTemplate != "{{ .Version }}-SNAPSHOT-{{ .ShortCommit }}" {
		t.Errorf("snapshot version %q: scripts/release.sh makes VERSION-SNAPSHOT-SHORTCOMMIT", c.Snapshot.VersionTemplate)
	}

	// scripts/release.sh: the same platforms, programs, flags and names.
	script := read(t, "scripts/release.sh")
	for _, want := range []string{
		`PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}`,
		`PROGRAMS="agentpool agentpool-light agentpool-full"`,
		`PKG=` + binariesPkg,
		`ldflags="-s -w -X $PKG.Version=$VERSION -X $PKG.Commit=$commit -X $PKG.Date=$date"`,
		`CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -ldflags="$ldflags"`,
		`name="agentpool_${VERSION}_${os}_${arch}"`,
		`$PROGRAMS README.md`,
		`"$DIST/agentpool_${VERSION}_checksums.txt"`,
		`VERSION="${tag#v}-SNAPSHOT-$short"`,
	} {
		if !strings.Contains(script, want) {
			t.Errorf("scripts/release.sh does not contain %q: it must build what .goreleaser.yaml builds", want)
		}
	}
}
