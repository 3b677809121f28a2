package batteries

import (
	"testing"

	"github.com/agentpool/agentpool/config"
)

// A provider's model uses the provider's URL and key variable unless the
// manifest sets them; a local provider without a key gets a placeholder
// rather than OPENAI_API_KEY.
func TestProviderEndpoint(t *testing.T) {
	groq, _ := config.LookupProvider("groq")
	if u, k, env := providerEndpoint(groq, config.ModelSpec{}); u != "https://api.groq.com/openai/v1" || k != "" || env != "GROQ_API_KEY" {
		t.Errorf("groq = %s %q %s", u, k, env)
	}
	if u, k, env := providerEndpoint(groq, config.ModelSpec{BaseURL: "http://proxy.test/v1", APIKeyEnv: "MY_KEY"}); u != "http://proxy.test/v1" || k != "" || env != "MY_KEY" {
		t.Errorf("groq with overrides = %s %q %s", u, k, env)
	}
	ollama, _ := config.LookupProvider("ollama")
	t.Setenv("OLLAMA_BASE_URL", "http://gpu.test:11434/v1")
	t.Setenv("OLLAMA_API_KEY", "")
	if u, k, env := providerEndpoint(ollama, config.ModelSpec{}); u != "http://gpu.test:11434/v1" || k != "none" || env != "" {
		t.Errorf("ollama = %s %q %s", u, k, env)
	}
	t.Setenv("OLLAMA_API_KEY", "secret")
	if _, k, env := providerEndpoint(ollama, config.ModelSpec{}); k != "" || env != "OLLAMA_API_KEY" {
		t.Errorf("ollama with a key = %q %s", k, env)
	}
	if _, err := Registry().NewModel(config.ModelSpec{Type: config.ModelOpenAI, Provider: "nope", Model: "m"}); err == nil {
		t.Error("unknown provider accepted")
	}
	m, err := Registry().NewModel(config.ModelSpec{Type: config.ModelOpenAI, Provider: "openrouter", Model: "openai/gpt-4o-mini"})
	if err != nil || m.ID() != "openai/gpt-4o-mini" {
		t.Errorf("openrouter model = %v, %v", m, err)
	}
}
