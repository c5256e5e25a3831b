package model_test

import (
	"slices"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/model"
)

func TestChoose(t *testing.T) {
	t.Parallel()
	c := model.ConfigFromEnv(envOf(map[string]string{"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"}), nil)
	cases := []struct {
		provider, name string
		families       []string
		want           model.Choice
		wantErr        string
	}{
		// No model on a provider that serves Claude: routed, within every family unless limited.
		{"", "", nil, model.Choice{Routed: true, Provider: "anthropic", Families: []string{"haiku", "sonnet", "opus", "fable"}}, ""},
		{"anthropic", "", []string{"haiku"}, model.Choice{Routed: true, Provider: "anthropic", Families: []string{"haiku"}}, ""},
		{"anthropic", "claude-opus-4-1", nil, model.Choice{Provider: "anthropic", Model: "claude-opus-4-1"}, ""},
		// OpenAI is never routed: its default model.
		{"openai", "", nil, model.Choice{Provider: "openai", Model: "gpt-4.1"}, ""},
		// Routing is decided before a key is needed: a missing key fails the run when it calls.
		{"openrouter", "", nil, model.Choice{Routed: true, Provider: "openrouter", Families: []string{"haiku", "sonnet", "opus", "fable"}}, ""},
		{"openrouter", "x", nil, model.Choice{}, "OPENROUTER_API_KEY"},
		{"mistral", "x", nil, model.Choice{}, "unknown model provider"},
	}
	for _, tc := range cases {
		got, err := c.Choose(tc.provider, tc.name, tc.families)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Choose(%q, %q) err = %v, want %q", tc.provider, tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.Routed != tc.want.Routed || got.Provider != tc.want.Provider || got.Model != tc.want.Model || !slices.Equal(got.Families, tc.want.Families) {
			t.Errorf("Choose(%q, %q, %v) = %+v, %v; want %+v", tc.provider, tc.name, tc.families, got, err, tc.want)
		}
	}
}
