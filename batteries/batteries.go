package batteries

import (
	"fmt"
	"os"
	"runtime/debug"
	"slices"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/external/a2aagent"
	"github.com/agentpool/agentpool/external/acpagent"
	"github.com/agentpool/agentpool/external/aguiagent"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/anthropic"
	"github.com/agentpool/agentpool/model/openai"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/mcp"
	"github.com/agentpool/agentpool/tool/search"
	"github.com/agentpool/agentpool/tool/webfetch"
)

// Registry returns a new registry with the builtin model types of
// pool.NewRegistry (test, scripted, fallback, input) and openai, anthropic, the
// fetch toolset, MCP servers, external ACP agents and remote A2A and AG-UI agents. Each call returns a fresh value that the
// caller may add to.
func Registry() *pool.Registry {
	return pool.NewRegistry().
		AddModel(config.ModelOpenAI, OpenAI).
		AddModel(config.ModelAnthropic, Anthropic).
		SetFetch(Fetch).
		SetSearch(Search).
		SetMCP(MCP).
		SetExternal(External)
}

// External builds the node of an external ACP agent (pool.ExternalMaker):
// its preset's command or its own, started in dir. An agent that takes
// MCP over stdio only is served no tools (ExternalWith sets a relay).
func External(a *config.Agent, dir string) (spawn.Node, error) { return external(a, dir, nil) }

// ExternalWith is External with the stdio MCP relay relay (a command
// line that runs mcprelay.Run: `agentpool mcp-relay`), through which an
// agent that takes MCP over stdio only is served the member's tools.
func ExternalWith(relay []string) pool.ExternalMaker {
	relay = slices.Clone(relay)
	return func(a *config.Agent, dir string) (spawn.Node, error) { return external(a, dir, relay) }
}

func external(a *config.Agent, dir string, relay []string) (spawn.Node, error) {
	x := a.External
	if x.A2A != nil {
		return A2A(a)
	}
	if x.AGUI != nil {
		return AGUI(a, dir)
	}
	confirm := acpagent.ConfirmAlways
	if x.RequiresToolConfirmation == "never" {
		confirm = acpagent.ConfirmNever
	}
	n, err := acpagent.New(acpagent.Config{
		Name: a.Name, Description: a.Description, Command: x.Command, Args: x.Args, Env: x.Env, Dir: dir,
		SystemPrompt: a.SystemPrompt, AllowFileOperations: x.AllowFileOperations, AllowTerminal: x.AllowTerminal,
		Confirm: confirm, MCPServers: a.MCPServers, InstallHint: x.Install,
		InitTimeout: x.InitTimeout, CancelGrace: x.CancelGrace, Relay: relay,
	})
	if err != nil {
		return nil, err // not a typed nil in a spawn.Node
	}
	return n, nil
}

// A2A builds the node of a remote A2A agent (`type: a2a`): its
// credential is read from the environment variable auth_env names, which
// must be set.
func A2A(a *config.Agent) (spawn.Node, error) {
	r := a.External.A2A
	headers := map[string]string{}
	for k, v := range r.Headers {
		headers[k] = v
	}
	if r.AuthEnv != "" {
		v := os.Getenv(r.AuthEnv)
		if v == "" {
			return nil, fmt.Errorf("environment variable %s (auth_env) is not set: it holds the credential for %s", r.AuthEnv, r.URL)
		}
		if r.AuthScheme != "" {
			v = r.AuthScheme + " " + v
		}
		headers[r.AuthHeader] = v
	}
	n, err := a2aagent.New(a2aagent.Config{
		Name: a.Name, Description: a.Description, URL: r.URL, Headers: headers, CancelGrace: a.External.CancelGrace,
	})
	if err != nil {
		return nil, err
	}
	return n, nil
}

// AGUI builds the node of a remote AG-UI agent (`type: agui`): ${VAR} in
// a header is the environment variable VAR, which must be set; its
// startup_command runs in dir.
func AGUI(a *config.Agent, dir string) (spawn.Node, error) {
	r := a.External.AGUI
	headers := map[string]string{}
	for k, v := range r.Headers {
		var unset []string
		headers[k] = os.Expand(v, func(name string) string {
			val, ok := os.LookupEnv(name)
			if !ok {
				unset = append(unset, name)
			}
			return val
		})
		if len(unset) > 0 {
			return nil, fmt.Errorf("header %s of agent %s names environment variable %s, which is not set", k, a.Name, unset[0])
		}
	}
	n, err := aguiagent.New(aguiagent.Config{
		Name: a.Name, Description: a.Description, Endpoint: r.Endpoint, Headers: headers, Timeout: r.Timeout,
		StartupCommand: r.StartupCommand, StartupDelay: r.StartupDelay, Dir: dir,
	})
	if err != nil {
		return nil, err
	}
	return n, nil
}

// ConfigOptions are the manifest parser's options for reg: its model
// types (config.LoadWith, config.ParseWith).
func ConfigOptions(reg *pool.Registry) config.Options {
	return config.Options{ModelTypes: reg.ModelTypes()}
}

// OpenAI builds an openai model (and one of an OpenAI-compatible provider,
// spec.Provider: its base URL and key variable unless the manifest wrote
// them).
func OpenAI(spec config.ModelSpec) (model.Model, error) {
	st := spec.Settings
	cfg := openai.Config{
		Model: spec.Model, BaseURL: spec.BaseURL, APIKey: spec.APIKey, APIKeyEnv: spec.APIKeyEnv,
		Temperature: spec.Temperature, MaxTokens: spec.MaxTokens, Timeout: spec.Timeout,
		InputPrice: spec.InputPrice, OutputPrice: spec.OutputPrice,
		TopP: st.TopP, PresencePenalty: st.PresencePenalty, FrequencyPenalty: st.FrequencyPenalty,
		Seed: st.Seed, Stop: st.Stop, ParallelToolCalls: st.ParallelToolCalls,
		ReasoningEffort: st.ReasoningEffort, Headers: st.ExtraHeaders,
	}
	if spec.Provider != "" {
		pr, ok := config.LookupProvider(spec.Provider)
		if !ok {
			return nil, fmt.Errorf("unknown model provider %q", spec.Provider)
		}
		cfg.BaseURL, cfg.APIKey, cfg.APIKeyEnv = providerEndpoint(pr, spec)
	}
	m, err := openai.New(cfg)
	if err != nil {
		return nil, err // not a typed nil in a model.Model
	}
	return m, nil
}

// Anthropic builds an anthropic model.
func Anthropic(spec config.ModelSpec) (model.Model, error) {
	m, err := anthropic.New(anthropic.Config{
		Model: spec.Model, BaseURL: spec.BaseURL, APIKey: spec.APIKey, APIKeyEnv: spec.APIKeyEnv,
		Temperature: spec.Temperature, MaxTokens: spec.MaxTokens, Timeout: spec.Timeout,
		InputPrice: spec.InputPrice, OutputPrice: spec.OutputPrice, Stop: spec.Settings.Stop,
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// providerEndpoint returns the base URL and key of an OpenAI-compatible
// provider's model: what the manifest wrote, else the provider's
// (BaseURLEnv when set in the environment, else its URL; its key
// variable). A local provider whose key variable is unset gets a
// placeholder key, so that OPENAI_API_KEY is never sent to it.
func providerEndpoint(pr config.Provider, spec config.ModelSpec) (baseURL, apiKey, apiKeyEnv string) {
	baseURL, apiKey, apiKeyEnv = spec.BaseURL, spec.APIKey, spec.APIKeyEnv
	if baseURL == "" {
		baseURL = pr.BaseURL
		if v := os.Getenv(pr.BaseURLEnv); pr.BaseURLEnv != "" && v != "" {
			baseURL = v
		}
	}
	if apiKey == "" && apiKeyEnv == "" {
		apiKeyEnv = pr.KeyEnv
		if pr.KeyOptional && os.Getenv(pr.KeyEnv) == "" {
			apiKey, apiKeyEnv = "none", ""
		}
	}
	return baseURL, apiKey, apiKeyEnv
}

// Fetch makes the WebFetch tool of agents that may reach allowedHosts
// besides public addresses (pool.FetchMaker).
func Fetch(allowedHosts []string) (tool.Tool, error) {
	allow, err := webfetch.ParseAllowList(allowedHosts)
	if err != nil {
		return nil, err
	}
	return webfetch.New(webfetch.Options{Allow: allow}), nil
}

// Search makes the search toolset's tools for the providers spec names
// (pool.SearchMaker): public addresses only, keys from the environment.
func Search(spec config.SearchSpec) ([]tool.Tool, error) {
	return search.New(search.Options{Web: searchProvider(spec.Web), News: searchProvider(spec.News)})
}

func searchProvider(p *config.SearchProvider) *search.Provider {
	if p == nil {
		return nil
	}
	return &search.Provider{Name: p.Name, APIKey: p.APIKey, APIKeyEnv: p.APIKeyEnv}
}

// MCP makes the manager of the MCP servers listed, whose commands run in
// dir (pool.MCPMaker); no server starts here. It introduces itself to
// servers as agentpool, with the main module's version.
func MCP(servers []config.MCPServer, dir string) (pool.MCPServers, error) {
	cfgs := make([]mcp.ServerConfig, 0, len(servers))
	for _, s := range servers {
		cfgs = append(cfgs, mcp.ServerConfig{
			Name: s.Name, Transport: s.Type, Command: s.Command, Args: s.Args, Env: s.Env,
			Dir: dir, URL: s.URL, Headers: s.Headers, Timeout: s.Timeout,
		})
	}
	m, err := mcp.NewManager(cfgs, mcp.Options{ClientName: "agentpool", ClientVersion: buildVersion()})
	if err != nil {
		return nil, err // not a typed nil in a pool.MCPServers
	}
	return m, nil
}

// buildVersion is the main module's version, for the MCP client info.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "dev"
}
