package code

import (
	"path/filepath"
	"slices"
	"strings"
)

// languages maps file extensions to language names (ast-grep's
// identifiers, which format_code also accepts).
var languages = map[string]string{
	".py": "python", ".pyi": "python",
	".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
	".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
	".rs": "rust", ".go": "go",
	".c": "c", ".h": "c",
	".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp",
	".java": "java", ".kt": "kotlin", ".rb": "ruby", ".swift": "swift",
	".lua": "lua", ".cs": "csharp",
	".sh": "bash", ".bash": "bash",
	".json": "json", ".css": "css", ".html": "html", ".yaml": "yaml", ".yml": "yaml",
	".md": "markdown",
}

// languageOf returns the language of path by its extension ("" unknown).
func languageOf(path string) string {
	return languages[strings.ToLower(filepath.Ext(path))]
}

// formatter is one program that formats source read on stdin to stdout.
type formatter struct {
	bin     string
	args    func(name string) []string // name: the file's base name
	install string                     // how to get it
}

func fixed(args ...string) func(string) []string {
	return func(string) []string { return args }
}

var (
	prettier    = formatter{"prettier", func(n string) []string { return []string{"--stdin-filepath", n} }, "npm install -g prettier"}
	clangFormat = formatter{"clang-format", func(n string) []string { return []string{"--assume-filename=" + n} }, "clang-format (apt install clang-format)"}
)

// formatters lists, per language, the formatters tried in order: the
// first installed one is used.
var formatters = map[string][]formatter{
	"go":         {{"gofmt", fixed(), "the Go toolchain (https://go.dev/dl), which has gofmt"}},
	"python":     {{"ruff", fixed("format", "-"), "ruff (pip install ruff)"}, {"black", fixed("-q", "-"), "black (pip install black)"}},
	"rust":       {{"rustfmt", fixed("--emit", "stdout"), "rustfmt (rustup component add rustfmt)"}},
	"javascript": {prettier},
	"typescript": {prettier},
	"tsx":        {prettier},
	"json":       {prettier},
	"css":        {prettier},
	"html":       {prettier},
	"yaml":       {prettier},
	"markdown":   {prettier},
	"c":          {clangFormat},
	"cpp":        {clangFormat},
	"java":       {clangFormat},
	"csharp":     {clangFormat},
	"lua":        {{"stylua", fixed("-"), "stylua (cargo install stylua)"}},
	"bash":       {{"shfmt", fixed(), "shfmt (apt install shfmt)"}},
	"swift":      {{"swift-format", fixed(), "swift-format (https://github.com/swiftlang/swift-format)"}},
	"kotlin":     {{"ktfmt", fixed("-"), "ktfmt (https://github.com/facebook/ktfmt)"}},
	"ruby":       {{"rufo", fixed(), "rufo (gem install rufo)"}},
}

// formatterLanguages lists the languages format_code knows, sorted.
func formatterLanguages() []string {
	var out []string
	for l := range formatters {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}
