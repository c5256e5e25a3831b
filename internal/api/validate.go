package api

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/catalog"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/cost"
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

// DefaultAndValidateAgent fills defaults and checks an agent as a user submitted it, reporting
// every problem it finds (ErrorList), the first as the error's own code and field.
// An agent may list the tools of the tool catalog (whether its computer fits is the server's
// check); extraTools are additional tool names this server offers (dev tools).
func DefaultAndValidateAgent(a *Agent, extraTools map[string]bool) error {
	var errs ErrorList
	errs.AddErr(checkTypeMeta(&a.TypeMeta, "Agent"))
	errs.AddErr(ValidName("metadata.name", a.Metadata.Name))
	errs.AddErr(ValidLabels("metadata.labels", a.Metadata.Labels))
	s := &a.Spec
	spec := NewPath("spec")
	model := spec.Child("model")
	switch s.Model.Access {
	case "":
		s.Model.Access = AccessServer
	case AccessNodus:
		s.Model.Access = AccessServer
	case AccessServer, AccessBYOK:
	default:
		errs.Add(Invalid(model.Child("access").String(), "access %q: use Server (alias Nodus) or BYOK", s.Model.Access))
	}
	if s.Model.Access == AccessBYOK {
		if s.Model.APIKeySecret == "" {
			errs.Add(E(CodeRequired, model.Child("apiKeySecret").String(), "BYOK access needs apiKeySecret (a Secret holding the vendor key)"))
		}
		if s.Model.Name == "" {
			errs.Add(E(CodeRequired, model.Child("name").String(), "BYOK access needs a model name"))
		}
	}
	if s.Model.Provider != "" && !s.Model.Provider.Known() {
		errs.Add(Invalid(model.Child("provider").String(), "provider %q: use %s", s.Model.Provider, OrList(ModelProviders)))
	}
	for i, f := range s.Model.Families {
		switch f {
		case "haiku", "sonnet", "opus", "fable":
		default:
			errs.Add(Invalid(model.Child("families").Index(i).String(), "family %q: use haiku, sonnet, opus or fable", f))
		}
	}
	seen := map[string]bool{}
	for i, t := range s.Tools {
		at := spec.Child("tools").Index(i).String()
		if why := catalog.CheckListed(t); why != "" && !extraTools[t] {
			errs.Add(Invalid(at, "%s", why))
		} else if seen[t] {
			errs.Add(Invalid(at, "tool %q is listed twice", t))
		}
		seen[t] = true
	}
	if s.Harness == "" {
		s.Harness = HarnessBuiltin
	}
	if !s.Harness.Known() {
		errs.Add(Invalid(spec.Child("harness").String(), "harness %q is not available on this server (available: %s)", s.Harness, harnessList()))
	}
	if s.Computer != nil {
		switch k := s.Computer.Kind; {
		case k == "" || k == computer.KindNone:
			s.Computer.Kind = computer.KindNone
		case k.Known():
			// Whether this server can provide it is the server's check (it knows its providers).
		default:
			errs.Add(Invalid(spec.Child("computer", "kind").String(), "computer kind %q: use %s", k, OrList(computer.Kinds)))
		}
	}
	if s.MaxTokens < 0 || s.MaxTokens > 1_000_000 {
		errs.Add(Invalid(spec.Child("maxTokens").String(), "maxTokens must be between 1 and 1000000"))
	}
	if s.MaxTokens == 0 {
		s.MaxTokens = DefaultMaxTokens
	}
	if s.MaxToolCalls < 0 || s.MaxToolCalls > 1000 {
		errs.Add(Invalid(spec.Child("maxToolCalls").String(), "maxToolCalls must be between 1 and 1000"))
	}
	if s.MaxToolCalls == 0 {
		s.MaxToolCalls = DefaultMaxToolCalls
	}
	if s.PerRunMaxCostUSD == "" {
		s.PerRunMaxCostUSD = DefaultPerRunMaxCostUSD
	}
	if _, err := cost.ParseUSDStrict(s.PerRunMaxCostUSD); err != nil {
		errs.Add(Invalid(spec.Child("perRunMaxCostUSD").String(), "%v", err))
	}
	switch s.State {
	case "", AgentStateRunning, AgentStateStopped:
	default:
		errs.Add(Invalid(spec.Child("state").String(), "state %q: use Running or Stopped", s.State))
	}
	if len(s.Description) > MaxDescriptionBytes {
		errs.Add(E(CodeTooLarge, spec.Child("description").String(), "the description is %d bytes; the limit is %d (1 KiB)", len(s.Description), MaxDescriptionBytes))
	}
	if len(s.System) > MaxInputBytes {
		errs.Add(E(CodeTooLarge, spec.Child("system").String(), "system prompt is %d bytes; the limit is %d", len(s.System), MaxInputBytes))
	}
	errs.AddErr(validateWorkflow(s.Workflow))
	if err := CheckIfBusy("spec.ifBusy", s.IfBusy); err != nil {
		errs.AddErr(err)
	} else if why := SteerUnsupported(s, s.IfBusy); s.IfBusy.Steers() && why != "" {
		errs.Add(Invalid(spec.Child("ifBusy").String(), "ifBusy %s %s; use enqueue or reject", s.IfBusy, why))
	}
	errs.AddErr(validateMCPServers(s.MCPServers, s.Harness))
	return errs.Err()
}

// OrList is "a, b or c".
func OrList[T ~string](vs []T) string {
	var b strings.Builder
	for i, v := range vs {
		switch {
		case i == 0:
		case i == len(vs)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(string(v))
	}
	return b.String()
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
	fmt.Fprintf(&b, "the workflow has %s:", workflow.CountErrors(len(errs)))
	for _, e := range errs {
		fmt.Fprintf(&b, " spec.workflow%s %s: %s;", e.Pointer, e.Code, e.Message)
	}
	return Invalid("spec.workflow"+errs[0].Pointer, "%s", strings.TrimSuffix(b.String(), ";"))
}

// DefaultAndValidateRun checks a run as a user submitted it (before the agent is looked up),
// reporting every problem it finds (ErrorList), the first as the error's own code and field.
// now resolves a relative deadline.
func DefaultAndValidateRun(r *AgentRun, now time.Time) error {
	var errs ErrorList
	errs.AddErr(checkTypeMeta(&r.TypeMeta, "AgentRun"))
	errs.AddErr(validateMember(r))
	// A member's name is checked against its group and task key there (and left empty when
	// they are not valid names).
	if !errs.Has("metadata.name") && (r.Spec.Group == "" || r.Metadata.Name != "") {
		errs.AddErr(ValidName("metadata.name", r.Metadata.Name))
	}
	errs.AddErr(ValidLabels("metadata.labels", r.Metadata.Labels))
	s := &r.Spec
	spec := NewPath("spec")
	if s.Agent == "" {
		errs.Add(E(CodeRequired, spec.Child("agent").String(), "spec.agent is required"))
	} else {
		errs.AddErr(ValidName(spec.Child("agent").String(), s.Agent))
	}
	input := spec.Child("input").String()
	if len(s.Input) > MaxInputBytes {
		errs.Add(E(CodeTooLarge, input, "input is %d bytes; the limit is %d (256 KiB)", len(s.Input), MaxInputBytes))
	} else if strings.TrimSpace(s.Input) == "" && !s.KeepAlive {
		errs.Add(E(CodeRequired, input, "spec.input is required (a run without input must set keepAlive and receive messages)"))
	}
	if s.MaxCostUSD != "" {
		if _, err := cost.ParseUSDStrict(s.MaxCostUSD); err != nil {
			errs.Add(Invalid(spec.Child("maxCostUSD").String(), "%v", err))
		}
	}
	if s.Deadline != "" {
		_, err := ResolveDeadline(s.Deadline, now)
		errs.AddErr(err)
	}
	return errs.Err()
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
