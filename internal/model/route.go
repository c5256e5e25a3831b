package model

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"agentrun.dev/agentrun/internal/cost"
)

// The router's pure parts: the rules that pick a family from a turn's signals, the router model's
// request and the reading of its answer. The agent loop journals and charges around them.

// Router strategies (serve/runner --router).
const (
	// RouterModel asks a cheap model (the haiku family) for the family of each turn.
	RouterModel = "model"
	// RouterRules decides from the prompt alone (length, code and tool signals): no call, no cost.
	RouterRules = "rules"
)

// RouterPrefix starts the routing call's only user message, followed by the user's request; the
// scripted model server keys on it (fake.RouterPrefix).
const RouterPrefix = "Route this request"

// RouterTimeout bounds the routing call; past it the turn falls back.
const RouterTimeout = 10 * time.Second

// routerMaxTokens bounds the routing call's answer (a small JSON object).
const routerMaxTokens = 200

// routePromptLimit bounds how much of the user's request the router sees.
const routePromptLimit = 8 << 10

// RouteSchema is the routing call's structured answer (Structured): the family and the router's
// confidence in it.
var RouteSchema = MustSchema("route", "Route the request: the model family that should answer it, and how sure you are.",
	json.RawMessage(`{"type":"object","properties":{"family":{"type":"string","enum":["haiku","sonnet","opus","fable"]},"confidence":{"type":"number","minimum":0,"maximum":1}},"required":["family","confidence"],"additionalProperties":false}`))

func routerSystem(families []string) string {
	return "You route a user's request to the model family that should answer it, for a whole turn of an agent that can run tools.\n" +
		"Families, cheapest and fastest first: haiku (simple questions, lookups, short edits), sonnet (most work: coding, analysis, multi-step tasks), " +
		"opus (hard reasoning, large or subtle changes), fable (the most demanding work).\n" +
		"Allowed families: " + strings.Join(families, ", ") + ".\n" +
		`Answer by calling the tool route: {"family": one of the allowed families, "confidence": a number from 0 to 1}.`
}

// RouterRequest is the routing call to routerModel for a prompt, choosing among allowed; it is
// asked through Structured with RouteSchema.
func RouterRequest(routerModel string, allowed []string, prompt string) *Request {
	return &Request{Model: routerModel, System: routerSystem(allowed), MaxTokens: routerMaxTokens,
		Messages: []Message{{Role: "user", Content: []Block{{Type: BlockText, Text: RouterPrefix + ": " + Clip(prompt, routePromptLimit)}}}}}
}

// RouterAnswer reads the routing call's validated answer (RouteSchema): the family and
// confidence it chose, or, when the family is not allowed, why (the turn then falls back).
func RouterAnswer(answer json.RawMessage, allowed []string) (family string, confidence float64, why string) {
	var ans struct {
		Family     string  `json:"family"`
		Confidence float64 `json:"confidence"`
	}
	if err := json.Unmarshal(answer, &ans); err != nil {
		return "", 0, "router answer: " + err.Error()
	}
	if !slices.Contains(allowed, ans.Family) {
		return "", 0, fmt.Sprintf("router chose %q, outside the allowed families %v", ans.Family, allowed)
	}
	return ans.Family, ans.Confidence, ""
}

// nearestFamily is want if allowed, else the allowed family nearest to it in cost.Families'
// order, cheapest first (the cheaper on a tie).
func nearestFamily(want string, allowed []string) string {
	best, bestD := "", 99
	rank := slices.Index(cost.Families, want)
	for i, f := range cost.Families {
		if !slices.Contains(allowed, f) {
			continue
		}
		d := i - rank
		if d < 0 {
			d = -d
		}
		if d < bestD {
			best, bestD = f, d
		}
	}
	return best
}

// FallbackFamily is sonnet if allowed, else the allowed family nearest to it (the cheaper on a
// tie).
func FallbackFamily(allowed []string) string { return nearestFamily("sonnet", allowed) }

var codeSignal = regexp.MustCompile("(?i)```|\\b(func|class|def|import|stack trace|traceback|refactor|debug|compile|implement|migrate|test suite|benchmark)\\b")

// RulesFamily is the deterministic router: short plain requests go to haiku, long or code-heavy
// ones to opus, the rest to sonnet; then the nearest allowed family. tools is how many tools
// the agent lists. It returns the family and why.
func RulesFamily(prompt string, tools int, allowed []string) (string, string) {
	want, why := "sonnet", "a request of ordinary size"
	code := codeSignal.MatchString(prompt)
	switch {
	case len(prompt) > 4000 || (code && len(prompt) > 1500):
		want, why = "opus", "a long or code-heavy request"
	case len(prompt) < 200 && !code && tools <= 2:
		want, why = "haiku", "a short request without code"
	}
	if slices.Contains(allowed, want) {
		return want, why
	}
	return nearestFamily(want, allowed), why + " (nearest allowed family)"
}

var minorVersion = regexp.MustCompile(`-(\d+)-(\d)$`)

// FamilyModel is the model id a family maps to, spelled for the provider (OpenRouter names
// Claude models "anthropic/claude-sonnet-4.5").
func FamilyModel(prices *cost.Table, provider, family string) (string, bool) {
	id, ok := prices.FamilyModel(family)
	if !ok {
		return "", false
	}
	if provider == "openrouter" && !strings.Contains(id, "/") {
		id = "anthropic/" + minorVersion.ReplaceAllString(id, "-$1.$2")
	}
	return id, true
}

// FamilyOf names the family a fixed model belongs to, if the price table maps one to it.
func FamilyOf(prices *cost.Table, id string) string {
	for _, f := range cost.Families {
		if m, ok := prices.FamilyModel(f); ok && cost.Normalize(m) == cost.Normalize(id) {
			return f
		}
	}
	return ""
}

// Clip cuts s to at most n bytes at a UTF-8 character's start, marking the cut with "…".
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
