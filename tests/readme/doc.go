// Package readme holds the tests that keep the README short and true: it
// stays under 15,000 bytes, every relative link in it (docs/ pages, their
// headings, other files) leads somewhere, its Go program is
// examples/library/main.go byte for byte (whose test runs it) with the
// output that test expects, and the release it describes (.goreleaser.yaml
// and scripts/release.sh, which make release runs) builds the three
// programs for the same platforms with the version flags that
// `agentpool version` reads.
package readme
