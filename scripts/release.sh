#!/usr/bin/env bash
# Builds the release archives of .goreleaser.yaml with go build and tar, for
# a machine without goreleaser (`make release` runs goreleaser when it is on
# PATH, else this): dist/agentpool_VERSION_OS_ARCH.tar.gz for linux and
# darwin, amd64 and arm64, each holding agentpool, agentpool-light,
# agentpool-full and README.md, and dist/agentpool_VERSION_checksums.txt
# (sha256sum's format, sorted by file name). VERSION is goreleaser's
# snapshot version: the last tag reachable from HEAD without its v (0.0.0
# when there is none), -SNAPSHOT-, the short commit. VERSION=1.2.3 in the
# environment names a version instead; PLATFORMS="linux/amd64" builds fewer.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
DIST=${DIST:-dist}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
PROGRAMS="agentpool agentpool-light agentpool-full"
PKG=github.com/agentpool/agentpool/internal/binaries

# The same git commands goreleaser runs for .FullCommit and .ShortCommit.
commit=$(git rev-parse HEAD)
short=$(git show --format=%h HEAD --quiet)
if [ -z "${VERSION:-}" ]; then
	tag=$(git describe --tags --abbrev=0 2>/dev/null || echo v0.0.0)
	VERSION="${tag#v}-SNAPSHOT-$short"
fi
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ldflags="-s -w -X $PKG.Version=$VERSION -X $PKG.Commit=$commit -X $PKG.Date=$date"

rm -rf "$DIST"
mkdir -p "$DIST"
for platform in $PLATFORMS; do
	os=${platform%/*} arch=${platform#*/}
	name="agentpool_${VERSION}_${os}_${arch}"
	dir="$DIST/$name"
	echo "== $name"
	mkdir -p "$dir"
	for prog in $PROGRAMS; do
		CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -ldflags="$ldflags" \
			-o "$dir/$prog" "./cmd/$prog"
	done
	cp README.md "$dir/"
	# Files at the archive's root, as goreleaser writes them (no wrapping
	# directory); numeric owner 0, so that no builder's user id ships.
	tar -czf "$DIST/$name.tar.gz" -C "$dir" --owner=0 --group=0 $PROGRAMS README.md
	rm -rf "$dir"
done
(cd "$DIST" && sha256sum -- *.tar.gz | LC_ALL=C sort -k 2) > "$DIST/agentpool_${VERSION}_checksums.txt"
echo "wrote $DIST/:"
ls -l "$DIST"
