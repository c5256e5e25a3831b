package model

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
)

// providerEnv lists the known providers in default-preference order, with the variables that
// configure them and their default models.
var providerEnv = []struct {
	name, keyVar, baseVar, model string
}{
	{"anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "claude-sonnet-4-5"},
	{"openai", "OPENAI_API_KEY", "OPENAI_BASE_URL", "gpt-4.1"},
	{"openrouter", "OPENROUTER_API_KEY", "OPENROUTER_BASE_URL", "anthropic/claude-sonnet-4.5"},
}

// Config is the set of providers the server's own keys give access to.
type Config struct {
	// Providers are those the environment gives a key (by Name()), and DefaultProvider the
	// environment's default; Resolve and Default add the stored keys (Stored) to them.
	Providers       map[string]Provider
	DefaultProvider string
	DefaultModel    map[string]string // by provider name
	// BaseURL is each provider's base URL as configured ("" means the vendor's own), for
	// providers built with a user's key (BYOK).
	BaseURL map[string]string
	HTTP    *http.Client
	// Stored, when set, reads the keys a signed-in person pasted in the console (Settings →
	// Model keys) by variable (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, ...). It is asked on every
	// Resolve, so the next call of every process reading the store uses a key pasted, replaced or
	// removed, without a restart. A provider the environment gives a key keeps that key and its
	// base URL: the environment wins.
	Stored func() (map[string]string, error)

	mu         sync.Mutex
	storedVars map[string]string   // what Stored last returned
	stored     map[string]Provider // built from storedVars
}

// ProviderVars are a known provider's variables: its key and base URL.
type ProviderVars struct{ Name, KeyVar, BaseVar string }

// Known lists the known providers in default-preference order.
func Known() []ProviderVars {
	out := make([]ProviderVars, len(providerEnv))
	for i, p := range providerEnv {
		out[i] = ProviderVars{p.name, p.keyVar, p.baseVar}
	}
	return out
}

// storedProviders returns the providers the stored keys give (those the environment gives are
// left out). The providers are built again only when the stored keys changed; when Stored fails
// (the store unreachable for a moment) the last keys read serve.
func (c *Config) storedProviders() map[string]Provider {
	if c.Stored == nil {
		return nil
	}
	vars, err := c.Stored()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil || maps.Equal(vars, c.storedVars) && c.stored != nil {
		return c.stored
	}
	out := map[string]Provider{}
	for _, p := range providerEnv {
		key := strings.TrimSpace(vars[p.keyVar])
		if key == "" || c.Providers[p.name] != nil {
			continue
		}
		base := strings.TrimSpace(vars[p.baseVar])
		if base == "" {
			base = c.BaseURL[p.name]
		}
		if p.name == "anthropic" {
			out[p.name] = NewAnthropic(base, key, c.HTTP)
		} else {
			out[p.name] = NewOpenAI(p.name, base, key, c.HTTP)
		}
	}
	c.storedVars, c.stored = vars, out
	return out
}

// provider is the provider named with its key: the environment's, else a stored one.
func (c *Config) provider(name string) (Provider, bool) {
	if p, ok := c.Providers[name]; ok {
		return p, true
	}
	p, ok := c.storedProviders()[name]
	return p, ok
}

// Default is the default provider: the environment's (AGENTRUN_DEFAULT_PROVIDER, else its first
// configured), else the first of anthropic, openai, openrouter with a stored key; "" when none.
func (c *Config) Default() string {
	if c.DefaultProvider != "" {
		return c.DefaultProvider
	}
	stored := c.storedProviders()
	for _, p := range providerEnv {
		if stored[p.name] != nil {
			return p.name
		}
	}
	return ""
}

// KeyVar is the variable (and the key in a Secret) that holds a provider's API key.
func KeyVar(provider string) (string, bool) {
	for _, p := range providerEnv {
		if p.name == provider {
			return p.keyVar, true
		}
	}
	return "", false
}

// ProviderForKeys picks the provider a set of keys (a Secret's) serves: the first of anthropic,
// openai, openrouter whose key variable is present.
func ProviderForKeys(keys map[string]string) (string, bool) {
	for _, p := range providerEnv {
		if strings.TrimSpace(keys[p.keyVar]) != "" {
			return p.name, true
		}
	}
	return "", false
}

// WithKey builds a client for provider with the given key, at the base URL configured for it.
func (c *Config) WithKey(provider, key string) (Provider, error) {
	switch provider {
	case "anthropic":
		return NewAnthropic(c.BaseURL[provider], key, c.HTTP), nil
	case "openai", "openrouter":
		return NewOpenAI(provider, c.BaseURL[provider], key, c.HTTP), nil
	}
	return nil, fmt.Errorf("unknown model provider %q (known: anthropic, openai, openrouter)", provider)
}

// ConfigFromEnv builds a Config from the environment: ANTHROPIC_API_KEY (+ANTHROPIC_BASE_URL),
// OPENAI_API_KEY (+OPENAI_BASE_URL), OPENROUTER_API_KEY (+OPENROUTER_BASE_URL). The default provider
// is AGENTRUN_DEFAULT_PROVIDER, else the first configured of anthropic, openai, openrouter.
// AGENTRUN_DEFAULT_MODEL replaces the default model of the default provider only (a model name means
// nothing to another vendor).
func ConfigFromEnv(getenv func(string) string, hc *http.Client) *Config {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	hc = keepConns(hc)
	c := &Config{Providers: map[string]Provider{}, DefaultModel: map[string]string{}, BaseURL: map[string]string{}, HTTP: hc}
	for _, p := range providerEnv {
		c.DefaultModel[p.name] = p.model
		c.BaseURL[p.name] = get(p.baseVar)
		key := get(p.keyVar)
		if key == "" {
			continue
		}
		if p.name == "anthropic" {
			c.Providers[p.name] = NewAnthropic(get(p.baseVar), key, hc)
		} else {
			c.Providers[p.name] = NewOpenAI(p.name, get(p.baseVar), key, hc)
		}
		if c.DefaultProvider == "" {
			c.DefaultProvider = p.name
		}
	}
	if d := get("AGENTRUN_DEFAULT_PROVIDER"); d != "" {
		c.DefaultProvider = d
	}
	if m := get("AGENTRUN_DEFAULT_MODEL"); m != "" && c.DefaultProvider != "" {
		c.DefaultModel[c.DefaultProvider] = m
	}
	return c
}

// ErrNoKey is in the chain of Resolve's error when the server has no key for the provider (or for
// any provider): a matter of the server's configuration, which a restart with the key fixes.
var ErrNoKey = errors.New("model provider has no key")

type noKey string

func (e noKey) Error() string        { return string(e) }
func (e noKey) Is(target error) bool { return target == ErrNoKey }

// Resolve picks the provider and model for a call; empty provider or model means the defaults. The
// error says which variable to set when the provider has no key.
func (c *Config) Resolve(provider, model string) (Provider, string, error) {
	if provider == "" {
		provider = c.Default()
	}
	if provider == "" {
		return nil, "", noKey("no model provider configured: paste a key in the console under Settings → Model keys, or set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY")
	}
	p, ok := c.provider(provider)
	if !ok {
		for _, pe := range providerEnv {
			if pe.name == provider {
				return nil, "", noKey(fmt.Sprintf("model provider %q has no key: set %s in the server's environment, or paste it in the console under Settings → Model keys", provider, pe.keyVar))
			}
		}
		return nil, "", fmt.Errorf("unknown model provider %q (known: anthropic, openai, openrouter)", provider)
	}
	if model == "" {
		model = c.DefaultModel[provider]
	}
	if model == "" {
		return nil, "", fmt.Errorf("model provider %q: no model named and no default model", provider)
	}
	return p, model, nil
}

// maxIdleConns is how many idle connections a model client keeps (per vendor host).
const maxIdleConns = 2048

// keepConns returns hc with its own transport when it has none: http.DefaultTransport keeps only
// two idle connections per host, so a runner with many runs calling one vendor at once closed and
// re-dialled (and, against a real vendor, re-handshook TLS) connections on most calls. It keeps
// up to maxIdleConns: a runner holds thousands of runs, and with the default 100 every call past
// the hundredth in flight still dialled again (~5% of a runner's CPU at 1,000 runs). An idle
// connection is closed after the transport's IdleConnTimeout (90 s).
func keepConns(hc *http.Client) *http.Client {
	if hc == nil || hc.Transport != nil {
		return hc
	}
	dt, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return hc
	}
	t := dt.Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = maxIdleConns, maxIdleConns
	c := *hc
	c.Transport = t
	return &c
}
