package pool

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/fallback"
	"github.com/agentpool/agentpool/model/human"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// ModelFactory builds the model a manifest's `model:` entry describes.
// It is called once per agent, when the pool is built.
type ModelFactory func(spec config.ModelSpec) (model.Model, error)

// FetchMaker makes the fetch toolset's tool (WebFetch) for agents that may
// reach the given allowed_hosts besides public addresses (each entry
// checked already; see config.Toolset.AllowedHosts). The pool calls it
// once per distinct allow-list.
type FetchMaker func(allowedHosts []string) (tool.Tool, error)

// SearchMaker makes the search toolset's tools (web_search, news_search)
// for the providers an agent's search entry names. The pool calls it once
// per agent that lists the toolset.
type SearchMaker func(spec config.SearchSpec) ([]tool.Tool, error)

// MCPServers are the MCP servers of a pool: the toolset of each by name,
// and Close, which stops those that started.
type MCPServers interface {
	Toolset(name string) (tool.Toolset, bool)
	Close() error
}

// MCPMaker makes the MCPServers of the enabled servers listed; their
// commands run in dir (the pool's workspace). It must not start them: a
// server starts when a run first needs its tools.
type MCPMaker func(servers []config.MCPServer, dir string) (MCPServers, error)

// ExternalMaker builds the node of a manifest's external agent (an agent
// with config.Agent.External: `type: acp`, or `type: a2a` with
// External.A2A: a remote agent, for which dir means nothing), whose process runs in dir
// (its cwd resolved against the manifest, else the pool's workspace, else
// the current directory). A command that is not installed is its error,
// saying how to install it.
type ExternalMaker func(a *config.Agent, dir string) (spawn.Node, error)

// Registry is what a pool can build beyond its core: the model types and
// the toolsets that need the network (fetch, MCP). It is explicit (no
// package holds one): a program makes one with NewRegistry, adds to it and
// passes it in Options.Registry and to FromManifest, so that the pool
// package itself depends on no provider SDK or HTTP client. Package
// batteries returns one with everything agentpool ships wired in.
//
// NewRegistry has the offline model types test, scripted and fallback.
// A Registry is safe for concurrent use; factories run outside its lock.
type Registry struct {
	mu     sync.RWMutex
	models map[string]ModelFactory
	order  []string // model types in the order added
	fetch  FetchMaker
	search SearchMaker
	mcp    MCPMaker
	ext    ExternalMaker
	desk   human.Desk // where input models find the person to ask
}

// NewRegistry returns a Registry with the builtin model types: test,
// scripted (the offline test models), fallback (the models of its list,
// each built by this registry, in order) and input (a person answers,
// asked through HumanDesk).
func NewRegistry() *Registry {
	r := &Registry{models: map[string]ModelFactory{}}
	r.add(config.ModelTest, newTestModel)
	r.add(config.ModelScripted, newTestModel)
	r.add(config.ModelFallback, r.newFallback)
	r.add(config.ModelInput, r.newHuman)
	return r
}

// HumanDesk is where the input models built by r find the person to ask:
// a program that can ask one (agentpool run on a terminal) attaches its
// Asker there. With none attached, an input model's turn fails with
// human.ErrNobodyToAsk.
func (r *Registry) HumanDesk() *human.Desk { return &r.desk }

// newHuman builds an input model (config.ModelInput).
func (r *Registry) newHuman(spec config.ModelSpec) (model.Model, error) {
	h := spec.Human
	return human.New(human.Config{PromptTemplate: h.PromptTemplate, ShowSystem: h.ShowSystem, InputPrompt: h.InputPrompt}, &r.desk), nil
}

// typeRE is what a model type may be, as config.Options.ModelTypes.
// Compiled on first use, not at package init, which every process linking
// the package pays (agentpool version too).
var typeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`) })

// AddModel makes the model type typ available to manifests (`model: TYPE`,
// `model: TYPE:MODEL` or `model: {type: TYPE, ...}`; config.Options) and
// to NewModel: f builds the model of every agent whose model has that type.
// Adding a type again replaces its factory (a program may wrap a builtin
// provider). It returns r, so that calls chain, and panics when typ is not
// a name (a letter, then letters, digits, "_" and "-") or f is nil: both
// are the program's mistakes, found the first time it runs.
func (r *Registry) AddModel(typ string, f ModelFactory) *Registry {
	if !typeRE().MatchString(typ) {
		panic(fmt.Sprintf("pool: Registry.AddModel: invalid model type %q (a letter, then letters, digits, \"_\" and \"-\")", typ))
	}
	if f == nil {
		panic(fmt.Sprintf("pool: Registry.AddModel(%q): nil factory", typ))
	}
	r.add(typ, f)
	return r
}

func (r *Registry) add(typ string, f ModelFactory) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.models[typ]; !ok {
		r.order = append(r.order, typ)
	}
	r.models[typ] = f
}

// SetFetch wires in the fetch toolset (config.ToolsetFetch); without it,
// an agent that lists the toolset is an error at Build. It returns r.
func (r *Registry) SetFetch(f FetchMaker) *Registry {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fetch = f
	return r
}

// SetSearch wires in the search toolset (config.ToolsetSearch); without
// it, an agent that lists the toolset is an error at Build. It returns r.
func (r *Registry) SetSearch(s SearchMaker) *Registry {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.search = s
	return r
}

// SetMCP wires in MCP servers; without it, a pool that declares an enabled
// server is an error at Build. It returns r.
func (r *Registry) SetMCP(m MCPMaker) *Registry {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mcp = m
	return r
}

// SetExternal wires in external agents (`type: acp`, package
// external/acpagent through batteries); without it, a manifest that
// declares one is an error at New. It returns r.
func (r *Registry) SetExternal(m ExternalMaker) *Registry {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ext = m
	return r
}

func (r *Registry) externalMaker() ExternalMaker {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.ext
}

// ModelTypes lists the model types of r in the order added (the builtin
// ones first): what config.Options.ModelTypes takes.
func (r *Registry) ModelTypes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.order)
}

// NewModel builds the model a manifest entry describes, with the factory
// added for its type (an empty type is the test model). A type r does not
// have is an error that lists those it has and says how to add one.
func (r *Registry) NewModel(spec config.ModelSpec) (model.Model, error) {
	typ := spec.Type
	if typ == "" {
		typ = config.ModelTest
	}
	r.mu.RLock()
	f, ok := r.models[typ]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("model type %q is not wired into this program (wired: %s); %s", typ, strings.Join(r.ModelTypes(), ", "), config.WiringHint)
	}
	m, err := f(spec)
	if err == nil && m == nil {
		err = errors.New("the factory returned no model")
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// fetchMaker and mcpMaker return what is wired in (nil: nothing).
func (r *Registry) fetchMaker() FetchMaker {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.fetch
}

func (r *Registry) searchMaker() SearchMaker {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.search
}

func (r *Registry) mcpMaker() MCPMaker {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.mcp
}

// newFallback builds the models of a fallback model with r, in order.
func (r *Registry) newFallback(spec config.ModelSpec) (model.Model, error) {
	models := make([]model.Model, 0, len(spec.Fallback))
	for i, s := range spec.Fallback {
		m, err := r.NewModel(s)
		if err != nil {
			return nil, fmt.Errorf("fallback model %d: %w", i, err)
		}
		models = append(models, m)
	}
	m, err := fallback.New(models...)
	if err != nil {
		return nil, err
	}
	return m, nil
}
