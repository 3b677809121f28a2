// Model ids as AgentPool (pydantic-ai, llmling-models) writes them:
// `provider:model` for OpenAI-compatible services, bare ids resolved to
// their provider, and the typed model maps (type string, openai,
// anthropic, openrouter, gemini, test, fallback).

package config

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Provider is an OpenAI-compatible service that a `provider:model` id
// names. Its models are built by the openai model type, with the
// provider's base URL and API key variable unless the manifest sets
// base_url, api_key or api_key_env.
type Provider struct {
	Name    string
	BaseURL string
	// BaseURLEnv, when set in the environment, replaces BaseURL (a local
	// server elsewhere).
	BaseURLEnv string
	KeyEnv     string
	// KeyOptional: the server needs no key (local servers).
	KeyOptional bool
}

// providers are the OpenAI-compatible services known by name.
var providers = []Provider{
	{Name: "openrouter", BaseURL: "https://openrouter.ai/api/v1", KeyEnv: "OPENROUTER_API_KEY"},
	{Name: "groq", BaseURL: "https://api.groq.com/openai/v1", KeyEnv: "GROQ_API_KEY"},
	{Name: "ollama", BaseURL: "http://localhost:11434/v1", BaseURLEnv: "OLLAMA_BASE_URL", KeyEnv: "OLLAMA_API_KEY", KeyOptional: true},
	{Name: "deepseek", BaseURL: "https://api.deepseek.com/v1", KeyEnv: "DEEPSEEK_API_KEY"},
	{Name: "mistral", BaseURL: "https://api.mistral.ai/v1", KeyEnv: "MISTRAL_API_KEY"},
	{Name: "together", BaseURL: "https://api.together.xyz/v1", KeyEnv: "TOGETHER_API_KEY"},
	{Name: "fireworks", BaseURL: "https://api.fireworks.ai/inference/v1", KeyEnv: "FIREWORKS_API_KEY"},
	{Name: "cerebras", BaseURL: "https://api.cerebras.ai/v1", KeyEnv: "CEREBRAS_API_KEY"},
	{Name: "xai", BaseURL: "https://api.x.ai/v1", KeyEnv: "XAI_API_KEY"},
	{Name: "gemini", BaseURL: "https://generativelanguage.googleapis.com/v1beta/openai", KeyEnv: "GEMINI_API_KEY"},
	{Name: "github", BaseURL: "https://models.github.ai/inference", KeyEnv: "GITHUB_API_KEY"},
	{Name: "moonshotai", BaseURL: "https://api.moonshot.ai/v1", KeyEnv: "MOONSHOTAI_API_KEY"},
	{Name: "cohere", BaseURL: "https://api.cohere.ai/compatibility/v1", KeyEnv: "CO_API_KEY"},
	{Name: "perplexity", BaseURL: "https://api.perplexity.ai", KeyEnv: "PERPLEXITY_API_KEY"},
	{Name: "requesty", BaseURL: "https://router.requesty.ai/v1", KeyEnv: "REQUESTY_API_KEY"},
	{Name: "zai", BaseURL: "https://api.z.ai/api/paas/v4", KeyEnv: "ZAI_API_KEY"},
	{Name: "vercel-gateway", BaseURL: "https://ai-gateway.vercel.sh/v1", KeyEnv: "AI_GATEWAY_API_KEY"},
	{Name: "lmstudio", BaseURL: "http://localhost:1234/v1", BaseURLEnv: "LMSTUDIO_BASE_URL", KeyEnv: "LMSTUDIO_API_KEY", KeyOptional: true},
}

// providerAliases are other names of a provider (pydantic-ai's).
var providerAliases = map[string]string{
	"grok": "xai", "google-gla": "gemini", "vercel": "vercel-gateway", "moonshot": "moonshotai",
}

// unsupportedProviders are AgentPool model prefixes agentpool cannot
// serve, and why.
var unsupportedProviders = map[string]string{
	"anthropic-max": "it signs in with a Claude subscription (OAuth); use anthropic: with an API key",
	"claude-code":   "it runs Claude Code through Anthropic's Python SDK",
	"copilot":       "it signs in to GitHub Copilot (OAuth)",
	"google-vertex": "Vertex AI needs Google Cloud credentials; use gemini: with GEMINI_API_KEY",
	"bedrock":       "AWS Bedrock is not supported",
	"huggingface":   "Hugging Face inference is not supported; use an OpenAI-compatible server",
}

// Providers lists the OpenAI-compatible providers known by name.
func Providers() []Provider { return slices.Clone(providers) }

// LookupProvider returns the provider named name (or one of its aliases).
func LookupProvider(name string) (Provider, bool) {
	if a, ok := providerAliases[name]; ok {
		name = a
	}
	for _, pr := range providers {
		if pr.Name == name {
			return pr, true
		}
	}
	return Provider{}, false
}

func providerNames() []string {
	out := make([]string, len(providers))
	for i, pr := range providers {
		out[i] = pr.Name
	}
	return out
}

// bareModel returns the type of a model id written without a provider,
// as pydantic-ai infers it: gpt-*, o1/o3/o4 and chatgpt-* are OpenAI's,
// claude-* Anthropic's, gemini-* Google's (its OpenAI-compatible API).
func bareModel(id string) (typ, provider string, ok bool) {
	switch {
	case strings.HasPrefix(id, "gpt"), strings.HasPrefix(id, "chatgpt-"), strings.HasPrefix(id, "codex-"),
		id == "o1" || id == "o3" || id == "o4", strings.HasPrefix(id, "o1-"), strings.HasPrefix(id, "o3-"), strings.HasPrefix(id, "o4-"):
		return ModelOpenAI, "", true
	case strings.HasPrefix(id, "claude"):
		return ModelAnthropic, "", true
	case strings.HasPrefix(id, "gemini"):
		return ModelOpenAI, "gemini", true
	}
	return "", "", false
}

// modelID resolves a model id that is neither agentpool's own type nor a
// registered one: `provider:model` of a known provider, or a bare id. It
// reports false when s is none of those (the caller reports it).
func (p *parser) modelID(ms *ModelSpec, s string, n *yaml.Node, path string) bool {
	prefix, id, hasID := strings.Cut(s, ":")
	if hasID {
		if why, ok := unsupportedProviders[prefix]; ok {
			p.add(n.Line, path, "model provider %q is not supported: %s", prefix, why)
			return true
		}
		pr, ok := LookupProvider(prefix)
		if !ok {
			return false
		}
		if strings.TrimSpace(id) == "" {
			p.add(n.Line, path, "missing model id: write \"%s:MODEL\"", prefix)
			return true
		}
		ms.Type, ms.Provider, ms.Model = ModelOpenAI, pr.Name, strings.TrimSpace(id)
		return true
	}
	typ, provider, ok := bareModel(s)
	if !ok {
		return false
	}
	ms.Type, ms.Provider, ms.Model = typ, provider, s
	return true
}

// unknownModel is the error of a model string that names nothing known.
func (p *parser) unknownModel(s string) string {
	prefix, _, _ := strings.Cut(s, ":")
	if sg := suggest(prefix, append(p.modelTypes(), providerNames()...)); sg != "" {
		return "unknown model type " + quote(prefix) + sg
	}
	return "unknown model type " + quote(prefix) + " (types: " + strings.Join(p.modelTypes(), ", ") + "; providers: " + strings.Join(providerNames(), ", ") + ", as PROVIDER:MODEL)"
}

func quote(s string) string { return `"` + s + `"` }

// unsupportedModelTypes are llmling-models types agentpool cannot build.
var unsupportedModelTypes = map[string]string{
	"remote-input": "a person answering over llmling-models' websocket server is not supported; type: input asks the person on agentpool run's terminal",
	"remote-proxy": "remote model proxies are not supported",
	"user-select":  "asking the user to pick a model is not supported",
	"delegation":   "a model that picks another model is not supported; use a fallback model or delegate with the subagent tools",
	"augmented":    "pre- and post-prompt models are not supported",
	"claude_code":  "Claude Code models run through Anthropic's Python SDK",
}

// pythonModelTypes are llmling-models types that are Python code.
var pythonModelTypes = map[string]string{
	"function": "model type \"function\" is a Python function",
	"import":   "model type \"import\" is a Python import path",
}
