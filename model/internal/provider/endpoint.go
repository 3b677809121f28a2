package provider

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Config is what a provider resolves with Setup: the manifest's model keys
// and the provider's own names and defaults.
type Config struct {
	// Name prefixes every error text ("openai").
	Name string
	// Model is the model id; it must not be blank.
	Model string
	// BaseURL, APIKey and APIKeyEnv are the manifest's values.
	BaseURL, APIKey, APIKeyEnv string
	// EnvAPIKey and EnvBaseURL are the provider's environment variables;
	// DefaultBaseURL is used when neither BaseURL nor EnvBaseURL is set.
	EnvAPIKey, EnvBaseURL, DefaultBaseURL string
	// URLForm is what an invalid base URL's error says to use
	// ("http(s)://host[:port]/path").
	URLForm string
	// OfficialHost is the provider's own API host: without a configured
	// key, a key is required there only.
	OfficialHost string
	// Timeout bounds each attempt when > 0 (for the error text).
	Timeout time.Duration
	// MaxRetries: 0 means DefaultMaxRetries, a negative value means none.
	MaxRetries, DefaultMaxRetries int
	// HTTPClient: nil means a client of its own.
	HTTPClient *http.Client
}

// Endpoint is a resolved configuration: where and how a provider's model is
// called, and how its failures are told. It is immutable and safe for
// concurrent use.
type Endpoint struct {
	// BaseURL is the base URL without its query; it may carry user info
	// (sent as basic authentication), so show SafeBaseURL instead.
	BaseURL string
	// Query is the configured base URL's query ("api-version=..." for
	// Azure, a gateway's key), which URL adds to every request. Nil when
	// it has none.
	Query url.Values
	// SafeBaseURL is BaseURL without user info, for messages.
	SafeBaseURL string
	// Official: the base URL's host is Config.OfficialHost.
	Official bool
	// Retries is the resolved number of retries (>= 0).
	Retries int
	// HTTPClient sends the requests; never nil.
	HTTPClient *http.Client

	name, model, envAPIKey string
	timeout                time.Duration
	key                    string // redacted from every error
	keyErr                 string // a missing key, reported by MissingKey
}

// Setup resolves cfg. It fails only on a bad configuration (no model id, an
// unusable base URL); a missing API key is kept for MissingKey, so that a
// manifest can be loaded on a machine without keys.
func Setup(cfg Config) (*Endpoint, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New(cfg.Name + ": model id is required")
	}
	base := cfg.BaseURL
	if base == "" {
		base = os.Getenv(cfg.EnvBaseURL)
	}
	if base == "" {
		base = cfg.DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: invalid base URL %q: want %s", cfg.Name, safeURL(base), cfg.URLForm)
	}
	query, err := BaseURLQuery(u)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid base URL %q: %w", cfg.Name, safeURL(base), err)
	}
	e := &Endpoint{
		BaseURL:     strings.SplitN(base, "?", 2)[0],
		Query:       query,
		SafeBaseURL: safeURL(base),
		Official:    strings.EqualFold(u.Hostname(), cfg.OfficialHost),
		HTTPClient:  cfg.HTTPClient,
		name:        cfg.Name,
		model:       cfg.Model,
		envAPIKey:   cfg.EnvAPIKey,
		timeout:     cfg.Timeout,
	}
	switch {
	case cfg.APIKey != "":
		e.key = cfg.APIKey
	case cfg.APIKeyEnv != "":
		e.key = os.Getenv(cfg.APIKeyEnv)
		if e.key == "" {
			e.keyErr = fmt.Sprintf("%s: no API key: environment variable %s (api_key_env) is not set", cfg.Name, cfg.APIKeyEnv)
		}
	default:
		e.key = os.Getenv(cfg.EnvAPIKey)
		if e.key == "" && e.Official {
			e.keyErr = fmt.Sprintf("%s: no API key: set %s, or api_key / api_key_env in the manifest", cfg.Name, cfg.EnvAPIKey)
		}
	}
	switch e.Retries = cfg.MaxRetries; {
	case e.Retries == 0:
		e.Retries = cfg.DefaultMaxRetries
	case e.Retries < 0:
		e.Retries = 0
	}
	if e.HTTPClient == nil {
		e.HTTPClient = &http.Client{}
	}
	return e, nil
}

// APIKey is the resolved key ("" when there is none), for the request's
// authentication header only.
func (e *Endpoint) APIKey() string { return e.key }

// MissingKey returns a new *Error when no key could be found where one is
// needed, else nil.
func (e *Endpoint) MissingKey() error {
	if e.keyErr == "" {
		return nil
	}
	return &Error{Message: e.keyErr, text: e.keyErr}
}

// BaseURLQuery returns the query of a base URL, which every request must
// carry; an error when the URL has a fragment (which is never sent) or a
// query that does not parse (which would be sent otherwise than written).
func BaseURLQuery(u *url.URL) (url.Values, error) {
	if u.Fragment != "" {
		return nil, errors.New("a fragment (#...) is never sent; remove it")
	}
	if u.RawQuery == "" {
		return nil, nil
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("bad query: %w", err)
	}
	return q, nil
}

// safeURL drops the user info (a password) of a URL.
func safeURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "[unparsable base URL]"
	}
	u.User = nil
	if u.RawQuery != "" {
		// A query may carry a key (?key=..., ?api_key=..., a signature):
		// keep the names, hide every value but the API version.
		q := u.Query()
		for k := range q {
			if !strings.EqualFold(k, "api-version") {
				q[k] = []string{"[redacted]"}
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}
