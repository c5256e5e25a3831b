package server

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// POST /v2/templates/apply makes a template's agent, skills and triggers in one step: every part
// is checked before any is stored (the same checks as POST /v2/agents, /v2/skills and
// /v2/triggers, each error's field under agent., skills[i]. or triggers[i].), and what was made
// is removed again when a later write fails. The store has no transaction spanning resources, so
// this is the rule: validate all, then write, then undo on failure. A skill version once stored
// stays (versions are immutable and content-addressed: the same files are the same version).
func (s *Server) templateRoutes(v2 *http.ServeMux) {
	v2.HandleFunc("POST /v2/templates/apply", s.applyTemplate)
}

// maxTemplateBody bounds a template's body: its skills' files (1 MiB each at most) and the rest.
const maxTemplateBody = 8 << 20

// under is err as an API error with its fields nested under prefix (a store error named as the
// API names it).
func under(prefix api.Path, err error) error {
	e, ok := api.AsError(err)
	if !ok {
		e = storeErr(err)
	}
	return e.Under(prefix)
}

func (s *Server) applyTemplate(w http.ResponseWriter, r *http.Request) {
	body, err := readBodyLimit(w, r, maxTemplateBody)
	if err != nil {
		writeErr(w, err)
		return
	}
	var req api.TemplateApply
	if err := api.DecodeStrict(body, &req); err != nil {
		writeErr(w, err)
		return
	}
	out, err := s.makeTemplate(r.Context(), &req)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

// makeTemplate applies a template as one unit: everything is checked first (every skill's and
// the agent's mistakes at once, then the agent's and the triggers' names), then written, and the
// writes undone if one fails.
func (s *Server) makeTemplate(ctx context.Context, req *api.TemplateApply) (*api.TemplateApplied, error) {
	a := &req.Agent
	if err := labelTemplate(a, req.Template); err != nil {
		return nil, err
	}
	if err := s.checkTemplate(ctx, req); err != nil {
		return nil, err
	}
	_, gerr := s.Store.GetAgent(ctx, a.Metadata.Name)
	if err := mustNotExist(gerr, "agent", a.Metadata.Name); err != nil {
		return nil, under(api.NewPath("agent"), err)
	}
	triggers, err := s.checkTemplateTriggers(ctx, req)
	if err != nil {
		return nil, err
	}
	out, err := s.writeTemplate(ctx, req)
	if err != nil {
		return nil, err
	}
	out.Triggers = triggers
	return out, nil
}

// labelTemplate marks the agent with the template it came from.
func labelTemplate(a *api.Agent, template string) error {
	if template == "" {
		return nil
	}
	if err := api.ValidName("template", template); err != nil {
		return err
	}
	if template == api.TemplateBuiltin {
		return api.Invalid("template", "%q marks the server's own ready-made agent; name the template otherwise", template)
	}
	if a.Metadata.Labels == nil {
		a.Metadata.Labels = map[string]string{}
	}
	a.Metadata.Labels[api.TemplateLabel] = template
	return nil
}

// checkTemplate checks the skills and the agent, telling every mistake at once. The agent's
// skills that come with the template are stored by writeTemplate; the others must be stored
// already, as for any agent.
func (s *Server) checkTemplate(ctx context.Context, req *api.TemplateApply) error {
	a := &req.Agent
	var errs api.ErrorList
	own := map[string]bool{}
	// unnamed: a skill was refused before its name was known, so no reference of the agent can
	// be told "not stored": it may be that skill's.
	unnamed := false
	for i := range req.Skills {
		sk := &req.Skills[i]
		if err := api.DefaultAndValidateSkill(sk); err != nil {
			errs.AddErr(under(api.NewPath("skills").Index(i), err))
			unnamed = unnamed || sk.Metadata.Name == ""
			own[sk.Metadata.Name] = true
			continue
		}
		own[sk.Metadata.Name] = true
	}
	all := a.Spec.Skills
	var others []string
	for _, ref := range all {
		name, _, _ := strings.Cut(ref, "@")
		if !own[name] && !unnamed {
			others = append(others, ref)
		}
	}
	a.Spec.Skills = others
	if err := s.validateAgent(ctx, a); err != nil {
		errs.AddErr(under(api.NewPath("agent"), err))
	}
	a.Spec.Skills = all
	return errs.Err()
}

// checkTemplateTriggers checks the template's triggers (each starts runs of the template's agent,
// once, under a free name; a schedule without a zone takes the server's) and says how each will
// be: one whose signing secret is not stored yet is made suspended.
func (s *Server) checkTemplateTriggers(ctx context.Context, req *api.TemplateApply) ([]api.TemplateTrigger, error) {
	a := &req.Agent
	var views []api.TemplateTrigger
	zone := serverZone()
	seen := map[string]bool{}
	for i := range req.Triggers {
		t := &req.Triggers[i]
		f := api.NewPath("triggers").Index(i)
		if seen[t.Metadata.Name] {
			// Caught here, before anything is stored, not by the second write's conflict.
			return nil, api.Invalid(f.Child("metadata", "name").String(), "the template names the trigger %q twice", t.Metadata.Name)
		}
		seen[t.Metadata.Name] = true
		if t.Spec.Agent != a.Metadata.Name {
			return nil, api.Invalid(f.Child("spec", "agent").String(), "a template's trigger starts runs of its agent %q, not %q", a.Metadata.Name, t.Spec.Agent)
		}
		if t.Spec.Schedule != nil && t.Spec.Schedule.TimeZone == "" {
			t.Spec.Schedule.TimeZone = zone // a template's schedule is in the server's time zone
		}
		t.Status = api.TriggerStatus{}
		if err := s.checkTriggerFor(ctx, t, a.Metadata.Name); err != nil {
			return nil, under(f, err)
		}
		_, gerr := s.Store.GetTrigger(ctx, t.Metadata.Name)
		if err := mustNotExist(gerr, "trigger", t.Metadata.Name); err != nil {
			return nil, under(f, err)
		}
		view := api.TemplateTrigger{Name: t.Metadata.Name, Kind: t.Spec.Kind()}
		if ref := t.Spec.SigningSecret(); ref != "" {
			if _, err := s.Store.GetSecret(ctx, ref); errors.Is(err, store.ErrNotFound) {
				t.Spec.Suspend = true // it cannot verify a delivery before its secret exists
				view.Suspended, view.SuspendedFor = true, ref
			} else if err != nil {
				return nil, err
			}
			view.WebhookURL = strings.TrimRight(s.BaseURL, "/") + "/v2/hooks/" + t.Metadata.Name
		}
		view.Suspended = view.Suspended || t.Spec.Suspend
		views = append(views, view)
	}
	return views, nil
}

// writeTemplate stores the checked skills, agent and triggers, undoing what it made if a write
// fails. A failure here is the store's (or a name taken meanwhile).
func (s *Server) writeTemplate(ctx context.Context, req *api.TemplateApply) (*api.TemplateApplied, error) {
	a := &req.Agent
	out := &api.TemplateApplied{}
	for i := range req.Skills {
		if _, err := s.Store.PutSkill(ctx, &req.Skills[i]); err != nil {
			return nil, under(api.NewPath("skills").Index(i), err)
		}
		out.Skills = append(out.Skills, req.Skills[i].Ref())
	}
	if err := s.resolveSkills(ctx, a); err != nil {
		return nil, under(api.NewPath("agent"), err)
	}
	if err := s.Store.CreateAgent(ctx, a); err != nil {
		return nil, under(api.NewPath("agent"), err)
	}
	var made []string
	undo := func() {
		// Undo with a context of its own: the request's may be what failed.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for _, n := range made {
			if err := s.Store.DeleteTrigger(uctx, n); err != nil {
				s.Log.Error("template apply: undo", "trigger", n, "err", err)
			}
		}
		if err := s.Store.DeleteAgent(uctx, a.Metadata.Name); err != nil {
			s.Log.Error("template apply: undo", "agent", a.Metadata.Name, "err", err)
		}
	}
	for i := range req.Triggers {
		if err := s.Store.CreateTrigger(ctx, &req.Triggers[i]); err != nil {
			undo()
			return nil, under(api.NewPath("triggers").Index(i), err)
		}
		made = append(made, req.Triggers[i].Metadata.Name)
	}
	out.Agent = withTools(a)
	return out, nil
}

// serverZone is the IANA name of the server's time zone: TZ, else /etc/localtime's target, else
// UTC.
func serverZone() string {
	if tz := os.Getenv("TZ"); tz != "" {
		if _, err := time.LoadLocation(strings.TrimPrefix(tz, ":")); err == nil {
			return strings.TrimPrefix(tz, ":")
		}
	}
	if l := time.Local.String(); l != "Local" && l != "" {
		return l
	}
	if p, err := os.Readlink("/etc/localtime"); err == nil {
		if _, name, ok := strings.Cut(p, "zoneinfo/"); ok {
			if _, err := time.LoadLocation(name); err == nil {
				return name
			}
		}
	}
	return "UTC"
}
