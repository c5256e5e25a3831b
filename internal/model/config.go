package model

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
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
	Providers       map[string]Provider // by Name(); only providers with a key
	DefaultProvider string
	DefaultModel    map[string]string // by provider name
	// BaseURL is each provider's base URL as configured ("" means the vendor's own), for
	// providers built with a user's key (BYOK).
	BaseURL map[string]string
	HTTP    *http.Client
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
		provider = c.DefaultProvider
	}
	if provider == "" {
		return nil, "", noKey("no model provider configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY")
	}
	p, ok := c.Providers[provider]
	if !ok {
		for _, pe := range providerEnv {
			if pe.name == provider {
				return nil, "", noKey(fmt.Sprintf("model provider %q has no key: set %s", provider, pe.keyVar))
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

// keepConns returns hc with its own transport when it has none: http.DefaultTransport keeps only
// two idle connections per host, so a runner with many runs calling one vendor at once closed and
// re-dialled (and, against a real vendor, re-handshook TLS) connections on most calls.
func keepConns(hc *http.Client) *http.Client {
	if hc == nil || hc.Transport != nil {
		return hc
	}
	dt, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return hc
	}
	t := dt.Clone()
	t.MaxIdleConnsPerHost = t.MaxIdleConns
	c := *hc
	c.Transport = t
	return &c
}
