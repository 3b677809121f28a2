package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentpool/agentpool/internal/jsonschema"
)

// Bounds of a suite.
const (
	MaxSuiteBytes    = 1 << 20
	MaxCases         = 1000
	MaxAssertions    = 50
	MaxFiles         = 100
	MaxFileBytes     = 1 << 20
	MaxConcurrency   = 32
	defaultTimeout   = 5 * time.Minute
	defaultParallels = 4
)

// Suite is a parsed evaluation suite.
type Suite struct {
	// File is the suite's path; Manifest is resolved against its directory.
	File string
	// Manifest is the manifest the cases run against (a path).
	Manifest string
	// Concurrency is how many cases run at once.
	Concurrency int
	// Timeout bounds each case's run.
	Timeout time.Duration
	Cases   []Case
}

// Case is one prompt with its checks.
type Case struct {
	Name   string
	Agent  string // "" for the manifest's default agent
	Prompt string
	// Files are written into the case's fresh workspace before it runs
	// (relative path -> content).
	Files  map[string]string
	Assert []Assertion
	Line   int
}

// Assertion is one check of a case's outcome; exactly one field is set.
type Assertion struct {
	Contains     string
	NotContains  string
	Regex        *regexp.Regexp
	JSONSchema   *jsonschema.Schema
	ToolCalled   string
	ChildSpawned string
	MaxCostUSD   *float64
	MaxTokens    *int64
	MaxDuration  time.Duration
	Judge        *Judge
	Line         int
}

// Judge asks an agent of the manifest whether the answer meets Criteria;
// its answer must begin with PASS or FAIL.
type Judge struct {
	Agent    string
	Criteria string
}

// String names the assertion as reports show it.
func (a Assertion) String() string {
	switch {
	case a.Contains != "":
		return fmt.Sprintf("contains %q", a.Contains)
	case a.NotContains != "":
		return fmt.Sprintf("not_contains %q", a.NotContains)
	case a.Regex != nil:
		return fmt.Sprintf("regex %q", a.Regex.String())
	case a.JSONSchema != nil:
		return "json_schema"
	case a.ToolCalled != "":
		return "tool_called " + a.ToolCalled
	case a.ChildSpawned != "":
		return "child_spawned " + a.ChildSpawned
	case a.MaxCostUSD != nil:
		return fmt.Sprintf("max_cost_usd %g", *a.MaxCostUSD)
	case a.MaxTokens != nil:
		return fmt.Sprintf("max_tokens %d", *a.MaxTokens)
	case a.MaxDuration > 0:
		return "max_duration " + a.MaxDuration.String()
	case a.Judge != nil:
		return "judge " + a.Judge.Agent
	}
	return "?"
}

// rawSuite is the YAML shape.
type rawSuite struct {
	Manifest    string    `yaml:"manifest"`
	Concurrency int       `yaml:"concurrency"`
	Timeout     string    `yaml:"timeout"`
	Cases       yaml.Node `yaml:"cases"`
}

type rawCase struct {
	Name   string            `yaml:"name"`
	Agent  string            `yaml:"agent"`
	Prompt string            `yaml:"prompt"`
	Files  map[string]string `yaml:"files"`
	Assert []yaml.Node       `yaml:"assert"`
}

type rawAssertion struct {
	Contains     string    `yaml:"contains"`
	NotContains  string    `yaml:"not_contains"`
	Regex        string    `yaml:"regex"`
	JSONSchema   yaml.Node `yaml:"json_schema"`
	ToolCalled   string    `yaml:"tool_called"`
	ChildSpawned string    `yaml:"child_spawned"`
	MaxCostUSD   *float64  `yaml:"max_cost_usd"`
	MaxTokens    *int64    `yaml:"max_tokens"`
	MaxDuration  string    `yaml:"max_duration"`
	Judge        *struct {
		Agent    string `yaml:"agent"`
		Criteria string `yaml:"criteria"`
	} `yaml:"judge"`
}

// Load reads and checks the suite at path.
func Load(path string) (*Suite, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readBounded(f, MaxSuiteBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse checks suite data read from file (named in errors; the manifest is
// resolved against its directory).
func Parse(file string, data []byte) (*Suite, error) {
	if len(data) > MaxSuiteBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", file, MaxSuiteBytes)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty suite", file)
	}
	if aliases(&doc) > 0 {
		return nil, fmt.Errorf("%s: YAML aliases are not accepted in a suite", file)
	}
	root := doc.Content[0]
	var raw rawSuite
	if err := decodeStrict(root, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	s := &Suite{File: file, Concurrency: raw.Concurrency, Timeout: defaultTimeout}
	if raw.Manifest != "" {
		s.Manifest = raw.Manifest
		if !filepath.IsAbs(s.Manifest) {
			s.Manifest = filepath.Join(filepath.Dir(file), s.Manifest)
		}
	}
	switch {
	case s.Concurrency == 0:
		s.Concurrency = defaultParallels
	case s.Concurrency < 0 || s.Concurrency > MaxConcurrency:
		return nil, lineErr(file, root, "concurrency", fmt.Errorf("must be 1 to %d, got %d", MaxConcurrency, raw.Concurrency))
	}
	if raw.Timeout != "" {
		d, err := time.ParseDuration(raw.Timeout)
		if err != nil || d <= 0 {
			return nil, lineErr(file, root, "timeout", fmt.Errorf("a positive duration such as 2m, not %q", raw.Timeout))
		}
		s.Timeout = d
	}
	if raw.Cases.Kind != yaml.SequenceNode || len(raw.Cases.Content) == 0 {
		return nil, lineErr(file, root, "cases", errors.New("a suite needs a list of cases"))
	}
	if n := len(raw.Cases.Content); n > MaxCases {
		return nil, lineErr(file, &raw.Cases, "cases", fmt.Errorf("%d cases, at most %d", n, MaxCases))
	}
	names := map[string]int{}
	for i, node := range raw.Cases.Content {
		c, err := parseCase(file, i, node)
		if err != nil {
			return nil, err
		}
		if prev, dup := names[c.Name]; dup {
			return nil, fmt.Errorf("%s:%d: cases[%d].name: %q is also the name of the case at line %d", file, node.Line, i, c.Name, prev)
		}
		names[c.Name] = node.Line
		s.Cases = append(s.Cases, c)
	}
	return s, nil
}

func parseCase(file string, i int, node *yaml.Node) (Case, error) {
	field := fmt.Sprintf("cases[%d]", i)
	var rc rawCase
	if err := decodeStrict(node, &rc); err != nil {
		return Case{}, fmt.Errorf("%s:%d: %s: %w", file, node.Line, field, err)
	}
	c := Case{Name: rc.Name, Agent: rc.Agent, Prompt: rc.Prompt, Files: rc.Files, Line: node.Line}
	if c.Name == "" {
		c.Name = fmt.Sprintf("case %d", i+1)
	}
	if strings.TrimSpace(c.Prompt) == "" {
		return Case{}, fmt.Errorf("%s:%d: %s.prompt: a case needs a prompt", file, node.Line, field)
	}
	if len(c.Files) > MaxFiles {
		return Case{}, fmt.Errorf("%s:%d: %s.files: %d files, at most %d", file, node.Line, field, len(c.Files), MaxFiles)
	}
	for p, content := range c.Files {
		if !filepath.IsLocal(p) {
			return Case{}, fmt.Errorf("%s:%d: %s.files: %q is not a relative path inside the workspace", file, node.Line, field, p)
		}
		if len(content) > MaxFileBytes {
			return Case{}, fmt.Errorf("%s:%d: %s.files: %q is larger than %d bytes", file, node.Line, field, p, MaxFileBytes)
		}
	}
	if len(rc.Assert) > MaxAssertions {
		return Case{}, fmt.Errorf("%s:%d: %s.assert: %d assertions, at most %d", file, node.Line, field, len(rc.Assert), MaxAssertions)
	}
	for j := range rc.Assert {
		a, err := parseAssertion(&rc.Assert[j])
		if err != nil {
			return Case{}, fmt.Errorf("%s:%d: %s.assert[%d]: %w", file, rc.Assert[j].Line, field, j, err)
		}
		c.Assert = append(c.Assert, a)
	}
	return c, nil
}

func parseAssertion(node *yaml.Node) (Assertion, error) {
	var ra rawAssertion
	if err := decodeStrict(node, &ra); err != nil {
		return Assertion{}, err
	}
	a := Assertion{Contains: ra.Contains, NotContains: ra.NotContains, ToolCalled: ra.ToolCalled,
		ChildSpawned: ra.ChildSpawned, MaxCostUSD: ra.MaxCostUSD, MaxTokens: ra.MaxTokens, Line: node.Line}
	set := 0
	for _, on := range []bool{ra.Contains != "", ra.NotContains != "", ra.Regex != "", ra.JSONSchema.Kind != 0,
		ra.ToolCalled != "", ra.ChildSpawned != "", ra.MaxCostUSD != nil, ra.MaxTokens != nil, ra.MaxDuration != "", ra.Judge != nil} {
		if on {
			set++
		}
	}
	if set != 1 {
		return Assertion{}, errors.New("an assertion has exactly one of contains, not_contains, regex, json_schema, tool_called, child_spawned, max_cost_usd, max_tokens, max_duration, judge")
	}
	if ra.Regex != "" {
		re, err := regexp.Compile(ra.Regex)
		if err != nil {
			return Assertion{}, fmt.Errorf("regex: %w", err)
		}
		a.Regex = re
	}
	if ra.JSONSchema.Kind != 0 {
		var v any
		if err := ra.JSONSchema.Decode(&v); err != nil {
			return Assertion{}, fmt.Errorf("json_schema: %w", err)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return Assertion{}, fmt.Errorf("json_schema: %w", err)
		}
		if a.JSONSchema, err = jsonschema.Parse(raw); err != nil {
			return Assertion{}, fmt.Errorf("json_schema: %w", err)
		}
	}
	if ra.MaxDuration != "" {
		d, err := time.ParseDuration(ra.MaxDuration)
		if err != nil || d <= 0 {
			return Assertion{}, fmt.Errorf("max_duration: a positive duration such as 30s, not %q", ra.MaxDuration)
		}
		a.MaxDuration = d
	}
	if (a.MaxCostUSD != nil && *a.MaxCostUSD < 0) || (a.MaxTokens != nil && *a.MaxTokens < 0) {
		return Assertion{}, errors.New("a bound cannot be negative")
	}
	if ra.Judge != nil {
		if ra.Judge.Agent == "" || strings.TrimSpace(ra.Judge.Criteria) == "" {
			return Assertion{}, errors.New("judge needs agent (an agent of the manifest) and criteria")
		}
		a.Judge = &Judge{Agent: ra.Judge.Agent, Criteria: ra.Judge.Criteria}
	}
	return a, nil
}

// decodeStrict decodes node, a mapping, into v, refusing keys that v's
// yaml tags do not name (with the key's line and the known keys).
func decodeStrict(node *yaml.Node, v any) error {
	if node.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want a mapping", node.Line)
	}
	known := yamlKeys(v)
	for i := 0; i+1 < len(node.Content); i += 2 {
		k := node.Content[i]
		if !slices.Contains(known, k.Value) {
			return fmt.Errorf("line %d: unknown field %q (known: %s)", k.Line, k.Value, strings.Join(known, ", "))
		}
	}
	return node.Decode(v)
}

// yamlKeys are the yaml keys of the struct v points to.
func yamlKeys(v any) []string {
	t := reflect.TypeOf(v).Elem()
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

func lineErr(file string, node *yaml.Node, field string, err error) error {
	line := node.Line
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == field {
			line = node.Content[i].Line
		}
	}
	return fmt.Errorf("%s:%d: %s: %w", file, line, field, err)
}

func aliases(n *yaml.Node) int {
	c := 0
	if n.Kind == yaml.AliasNode {
		c++
	}
	for _, k := range n.Content {
		c += aliases(k)
	}
	return c
}

func readBounded(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}
