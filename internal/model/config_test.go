package model_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/model"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		env           map[string]string
		providers     []string
		defaultP      string
		defaultModels map[string]string
	}{
		{"nothing", nil, nil, "", map[string]string{"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1"}},
		{"first configured wins", map[string]string{"OPENROUTER_API_KEY": "r", "OPENAI_API_KEY": "o"},
			[]string{"openai", "openrouter"}, "openai", nil},
		{"anthropic first", map[string]string{"OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a"},
			[]string{"anthropic", "openai"}, "anthropic", map[string]string{"openrouter": "anthropic/claude-sonnet-4.5"}},
		{"explicit default and model", map[string]string{"OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a",
			"AGENTRUN_DEFAULT_PROVIDER": "openai", "AGENTRUN_DEFAULT_MODEL": "gpt-5"},
			[]string{"anthropic", "openai"}, "openai", map[string]string{"openai": "gpt-5", "anthropic": "claude-sonnet-4-5"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := model.ConfigFromEnv(envOf(tc.env), nil)
			if len(c.Providers) != len(tc.providers) {
				t.Errorf("providers = %v, want %v", c.Providers, tc.providers)
			}
			for _, name := range tc.providers {
				if p := c.Providers[name]; p == nil || p.Name() != name {
					t.Errorf("provider %s = %v", name, p)
				}
			}
			if c.DefaultProvider != tc.defaultP {
				t.Errorf("default provider = %q, want %q", c.DefaultProvider, tc.defaultP)
			}
			for p, m := range tc.defaultModels {
				if c.DefaultModel[p] != m {
					t.Errorf("default model of %s = %q, want %q", p, c.DefaultModel[p], m)
				}
			}
		})
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	c := model.ConfigFromEnv(envOf(map[string]string{"ANTHROPIC_API_KEY": "a"}), nil)
	cases := []struct {
		provider, model string
		wantP, wantM    string
		wantErr         string
	}{
		{"", "", "anthropic", "claude-sonnet-4-5", ""},
		{"anthropic", "claude-opus-4-1", "anthropic", "claude-opus-4-1", ""},
		{"openai", "", "", "", "set OPENAI_API_KEY"},
		{"openrouter", "x", "", "", "set OPENROUTER_API_KEY"},
		{"mistral", "", "", "", "unknown model provider"},
	}
	for _, tc := range cases {
		p, m, err := c.Resolve(tc.provider, tc.model)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Resolve(%q, %q) err = %v, want %q", tc.provider, tc.model, err, tc.wantErr)
			}
			continue
		}
		if err != nil || p.Name() != tc.wantP || m != tc.wantM {
			t.Errorf("Resolve(%q, %q) = %v, %q, %v", tc.provider, tc.model, p, m, err)
		}
	}
	_, _, err := model.ConfigFromEnv(envOf(nil), nil).Resolve("", "")
	if err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("empty config: err = %v", err)
	}
}

// The base URL variables reach the clients: a provider built from the environment talks to the fake.
func TestConfigBaseURL(t *testing.T) {
	t.Parallel()
	_, url := startFake(t, testScript)
	c := model.ConfigFromEnv(envOf(map[string]string{
		"ANTHROPIC_API_KEY": "a", "ANTHROPIC_BASE_URL": url,
		"OPENAI_API_KEY": "o", "OPENAI_BASE_URL": url + "/v1",
	}), nil)
	for _, name := range []string{"anthropic", "openai"} {
		p, m, err := c.Resolve(name, "")
		if err != nil {
			t.Fatal(err)
		}
		r, err := p.Complete(context.Background(), &model.Request{Model: m, Messages: []model.Message{user("echo: hi")}})
		if err != nil || r.Content[0].Text != "You said echo: hi at turn 0." || r.Model != m {
			t.Errorf("%s: %+v, %v", name, r, err)
		}
	}
}

// Stored keys (the console's Settings → Model keys): read on each Resolve, so a key pasted,
// replaced or removed serves the next call; a provider the environment gives a key keeps it; the
// default provider is the environment's, else the first with a stored key; a failed read keeps
// the last keys read.
func TestStoredKeys(t *testing.T) {
	t.Parallel()
	stored := map[string]string{}
	var failing error
	c := model.ConfigFromEnv(envOf(map[string]string{"OPENAI_API_KEY": "env"}), nil)
	c.Stored = func() (map[string]string, error) {
		out := map[string]string{}
		for k, v := range stored {
			out[k] = v
		}
		return out, failing
	}
	if _, _, err := c.Resolve("anthropic", ""); !errors.Is(err, model.ErrNoKey) {
		t.Fatalf("before a paste: %v, want ErrNoKey", err)
	}
	stored["ANTHROPIC_API_KEY"] = "pasted"
	p1, m, err := c.Resolve("anthropic", "")
	if err != nil || p1.Name() != "anthropic" || m != "claude-sonnet-4-5" {
		t.Fatalf("after a paste: %v, %q, %v", p1, m, err)
	}
	if p, _, _ := c.Resolve("anthropic", ""); p != p1 {
		t.Error("the provider was built again though the stored keys did not change")
	}
	if d := c.Default(); d != "openai" {
		t.Errorf("default %q, want the environment's openai", d)
	}
	stored["OPENAI_API_KEY"] = "pasted-too"
	pEnv, _, _ := c.Resolve("openai", "")
	if pEnv != c.Providers["openai"] {
		t.Error("a pasted OpenAI key replaced the environment's")
	}
	stored["ANTHROPIC_API_KEY"] = "replaced"
	if p, _, _ := c.Resolve("anthropic", ""); p == p1 {
		t.Error("a replaced key did not make a new provider")
	}
	failing = errors.New("store unreachable")
	delete(stored, "ANTHROPIC_API_KEY")
	if _, _, err := c.Resolve("anthropic", ""); err != nil {
		t.Errorf("a failed read lost the last keys: %v", err)
	}
	failing = nil
	if _, _, err := c.Resolve("anthropic", ""); !errors.Is(err, model.ErrNoKey) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("after removal: %v, want ErrNoKey naming ANTHROPIC_API_KEY", err)
	}

	none := model.ConfigFromEnv(envOf(nil), nil)
	none.Stored = func() (map[string]string, error) { return map[string]string{"OPENROUTER_API_KEY": "r"}, nil }
	if d := none.Default(); d != "openrouter" {
		t.Errorf("default with only a stored OpenRouter key: %q", d)
	}
}
