package api

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/tools/catalog"
	"agentrun.dev/agentrun/internal/workflow"
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidName checks a metadata.name (a DNS label).
func ValidName(field, name string) error {
	if name == "" {
		return E(CodeRequired, field, "%s is required", field)
	}
	if len(name) > 63 || !dnsLabel.MatchString(name) {
		return Invalid(field, "%q is not a DNS label (lowercase letters, digits and '-', at most 63, starting and ending with a letter or digit)", name)
	}
	return nil
}

func checkTypeMeta(tm *TypeMeta, kind string) error {
	if tm.APIVersion != "" && tm.APIVersion != APIVersion && tm.APIVersion != AltAPIVersion {
		return Invalid("apiVersion", "apiVersion %q is not served; use %s", tm.APIVersion, APIVersion)
	}
	if tm.Kind != "" && tm.Kind != kind {
		return Invalid("kind", "kind is %q, expected %s", tm.Kind, kind)
	}
	tm.APIVersion, tm.Kind = APIVersion, kind
	return nil
}

// DefaultAndValidateAgent fills defaults and checks an agent as a user submitted it.
// An agent may list the tools of the tool catalog (whether its computer fits is the server's
// check); extraTools are additional tool names this server offers (dev tools).
func DefaultAndValidateAgent(a *Agent, extraTools map[string]bool) error {
	if err := checkTypeMeta(&a.TypeMeta, "Agent"); err != nil {
		return err
	}
	if err := ValidName("metadata.name", a.Metadata.Name); err != nil {
		return err
	}
	if err := ValidLabels("metadata.labels", a.Metadata.Labels); err != nil {
		return err
	}
	s := &a.Spec
	switch s.Model.Access {
	case "":
		s.Model.Access = AccessServer
	case AccessNodus:
		s.Model.Access = AccessServer
	case AccessServer, AccessBYOK:
	default:
		return Invalid("spec.model.access", "access %q: use Server (alias Nodus) or BYOK", s.Model.Access)
	}
	if s.Model.Access == AccessBYOK {
		if s.Model.APIKeySecret == "" {
			return E(CodeRequired, "spec.model.apiKeySecret", "BYOK access needs apiKeySecret (a Secret holding the vendor key)")
		}
		if s.Model.Name == "" {
			return E(CodeRequired, "spec.model.name", "BYOK access needs a model name")
		}
	}
	switch s.Model.Provider {
	case "", "anthropic", "openai", "openrouter":
	default:
		return Invalid("spec.model.provider", "provider %q: use anthropic, openai or openrouter", s.Model.Provider)
	}
	for i, f := range s.Model.Families {
		switch f {
		case "haiku", "sonnet", "opus", "fable":
		default:
			return Invalid("spec.model.families["+itoa(i)+"]", "family %q: use haiku, sonnet, opus or fable", f)
		}
	}
	seen := map[string]bool{}
	for i, t := range s.Tools {
		if why := catalog.CheckListed(t); why != "" && !extraTools[t] {
			return Invalid("spec.tools["+itoa(i)+"]", "%s", why)
		}
		if seen[t] {
			return Invalid("spec.tools["+itoa(i)+"]", "tool %q is listed twice", t)
		}
		seen[t] = true
	}
	if s.Harness == "" {
		s.Harness = "builtin"
	}
	if !knownHarness(s.Harness) {
		return Invalid("spec.harness", "harness %q is not available on this server (available: %s)", s.Harness, harnessList())
	}
	if s.Computer != nil {
		switch s.Computer.Kind {
		case "", "none":
			s.Computer.Kind = "none"
		case "sandbox", "browser", "desktop", "phone":
			// Whether this server can provide it is the server's check (it knows its providers).
		default:
			return Invalid("spec.computer.kind", "computer kind %q: use none, sandbox, browser, desktop or phone", s.Computer.Kind)
		}
	}
	if s.MaxTokens < 0 || s.MaxTokens > 1_000_000 {
		return Invalid("spec.maxTokens", "maxTokens must be between 1 and 1000000")
	}
	if s.MaxTokens == 0 {
		s.MaxTokens = DefaultMaxTokens
	}
	if s.MaxToolCalls < 0 || s.MaxToolCalls > 1000 {
		return Invalid("spec.maxToolCalls", "maxToolCalls must be between 1 and 1000")
	}
	if s.MaxToolCalls == 0 {
		s.MaxToolCalls = DefaultMaxToolCalls
	}
	if s.PerRunMaxCostUSD == "" {
		s.PerRunMaxCostUSD = DefaultPerRunMaxCostUSD
	}
	if _, err := cost.ParseUSDStrict(s.PerRunMaxCostUSD); err != nil {
		return Invalid("spec.perRunMaxCostUSD", "%v", err)
	}
	switch s.State {
	case "", AgentStateRunning, AgentStateStopped:
	default:
		return Invalid("spec.state", "state %q: use Running or Stopped", s.State)
	}
	if len(s.System) > MaxInputBytes {
		return E(CodeTooLarge, "spec.system", "system prompt is %d bytes; the limit is %d", len(s.System), MaxInputBytes)
	}
	if err := validateWorkflow(s.Workflow); err != nil {
		return err
	}
	return validateMCPServers(s.MCPServers, s.Harness)
}

// validateWorkflow checks spec.workflow completely: every error, each at its pointer under
// spec.workflow, the first as the error's field. A kind the engine does not run is refused here
// too (kind_not_runnable), so a saved agent can always run.
func validateWorkflow(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	// A child named by string is another agent's workflow: the server resolves and pins it
	// when it saves the agent (it has the store), so it is not refused here.
	_, errs := workflow.Validate(raw, workflow.Options{Runnable: true, DeferNamed: true})
	return WorkflowInvalid(errs)
}

// WorkflowInvalid is spec.workflow's errors as one Invalid error (nil for none): each at its
// pointer under spec.workflow, the first as the error's field.
func WorkflowInvalid(errs workflow.Invalid) error {
	if len(errs) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the workflow has %d errors:", len(errs))
	for _, e := range errs {
		fmt.Fprintf(&b, " spec.workflow%s %s: %s;", e.Pointer, e.Code, e.Message)
	}
	return Invalid("spec.workflow"+errs[0].Pointer, "%s", strings.TrimSuffix(b.String(), ";"))
}

// DefaultAndValidateRun checks a run as a user submitted it (before the agent is looked up).
// now resolves a relative deadline.
func DefaultAndValidateRun(r *AgentRun, now time.Time) error {
	if err := checkTypeMeta(&r.TypeMeta, "AgentRun"); err != nil {
		return err
	}
	if err := validateMember(r); err != nil {
		return err
	}
	if err := ValidName("metadata.name", r.Metadata.Name); err != nil {
		return err
	}
	if err := ValidLabels("metadata.labels", r.Metadata.Labels); err != nil {
		return err
	}
	s := &r.Spec
	if s.Agent == "" {
		return E(CodeRequired, "spec.agent", "spec.agent is required")
	}
	if err := ValidName("spec.agent", s.Agent); err != nil {
		return err
	}
	if len(s.Input) > MaxInputBytes {
		return E(CodeTooLarge, "spec.input", "input is %d bytes; the limit is %d (256 KiB)", len(s.Input), MaxInputBytes)
	}
	if strings.TrimSpace(s.Input) == "" && !s.KeepAlive {
		return E(CodeRequired, "spec.input", "spec.input is required (a run without input must set keepAlive and receive messages)")
	}
	if s.MaxCostUSD != "" {
		if _, err := cost.ParseUSDStrict(s.MaxCostUSD); err != nil {
			return Invalid("spec.maxCostUSD", "%v", err)
		}
	}
	if s.Deadline != "" {
		if _, err := ResolveDeadline(s.Deadline, now); err != nil {
			return err
		}
	}
	return nil
}

// ResolveDeadline turns spec.deadline into an absolute time.
func ResolveDeadline(s string, from time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, Invalid("spec.deadline", "deadline %q is neither an RFC 3339 time nor a positive duration like \"30m\"", s)
	}
	return from.Add(d), nil
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
