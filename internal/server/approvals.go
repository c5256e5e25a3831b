package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/console"
	"agentrun.dev/agentrun/internal/humanjson"
)

// approvalView is one approval as the API shows it: the call, the agent's stated reason, and the
// decision once made.
type approvalView struct {
	ID        int64           `json:"id"`
	StepKey   string          `json:"stepKey"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
	Reason    string          `json:"reason,omitempty"`
	Rule      string          `json:"rule,omitempty"`
	State     string          `json:"state"` // pending, approved, denied
	DecidedBy string          `json:"decidedBy,omitempty"`
	Note      string          `json:"note,omitempty"`
	AskedAt   time.Time       `json:"askedAt"`
}

func (s *Server) approvalViews(r *http.Request, run string) ([]approvalView, error) {
	steps, err := s.Store.ListSteps(r.Context(), run)
	if err != nil {
		return nil, err
	}
	out := []approvalView{}
	for _, st := range steps {
		if st.Kind != "approval" {
			continue
		}
		var args struct {
			Tool   string          `json:"tool"`
			Input  json.RawMessage `json:"input"`
			Reason string          `json:"reason"`
			Rule   string          `json:"rule"`
		}
		if err := json.Unmarshal(st.Args, &args); err != nil {
			return nil, fmt.Errorf("approval step %s: decode its arguments: %w", st.Key, err)
		}
		v := approvalView{ID: st.Seq, StepKey: st.Key, Tool: args.Tool, Input: args.Input, Reason: args.Reason, Rule: args.Rule, State: "pending", AskedAt: st.StartedAt}
		decision, by, note := st.Resolution, "", ""
		var res struct {
			Decision api.Resolution `json:"decision"`
			By       string         `json:"by"`
			Reason   string         `json:"reason"`
		}
		if st.State == api.StepCompleted && json.Unmarshal(st.Result, &res) == nil {
			decision, by, note = res.Decision, res.By, res.Reason
		} else if len(st.ResolutionResult) > 0 && json.Unmarshal(st.ResolutionResult, &res) == nil {
			by, note = res.By, res.Reason
		}
		switch decision {
		case "approve":
			v.State = "approved"
		case "deny":
			v.State = "denied"
		}
		v.DecidedBy, v.Note = by, note
		out = append(out, v)
	}
	return out, nil
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, err := s.Store.GetRun(r.Context(), name); err != nil {
		writeErr(w, err)
		return
	}
	vs, err := s.approvalViews(r, name)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": vs})
}

type decisionBody struct {
	Decision api.Resolution `json:"decision"`
	Reason   string         `json:"reason,omitempty"`
}

// decideApproval is POST /v2/agentruns/NAME/approvals/ID: a signed-in person approves or denies a
// waiting tool call. The API token cannot (403 PersonRequired).
func (s *Server) decideApproval(w http.ResponseWriter, r *http.Request) {
	p, ok := requirePerson(w, r, "approve or deny a tool call")
	if !ok {
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var b decisionBody
	if err := api.DecodeStrict(body, &b); err != nil {
		writeErr(w, err)
		return
	}
	if b.Decision != api.ResolveApprove && b.Decision != api.ResolveDeny {
		writeErr(w, api.Invalid("decision", "decision %q: use approve or deny", b.Decision))
		return
	}
	name := r.PathValue("name")
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		writeErr(w, api.Invalid("id", "approval id %q is not a number (see `agentrun runs approvals RUN`)", r.PathValue("id")))
		return
	}
	target, err := s.decide(r, name, id, b.Decision, b.Reason, p.User)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, target)
}

// decide records a person's decision on approval id of run.
func (s *Server) decide(r *http.Request, name string, id int64, decision api.Resolution, reason, user string) (*approvalView, error) {
	vs, err := s.approvalViews(r, name)
	if err != nil {
		return nil, err
	}
	var target *approvalView
	for i := range vs {
		if vs[i].ID == id {
			target = &vs[i]
		}
	}
	if target == nil {
		return nil, api.Errorf(http.StatusNotFound, api.CodeNotFound, "id", "run %q has no approval %d", name, id)
	}
	if target.State != "pending" {
		return nil, api.Errorf(http.StatusConflict, api.CodeConflict, "id", "approval %d was already %s by %s", id, target.State, target.DecidedBy)
	}
	by := "person:" + user
	res, _ := json.Marshal(map[string]string{"by": by, "reason": reason})
	if err := s.Store.ResolveStep(r.Context(), name, target.StepKey, decision, res); err != nil {
		return nil, err
	}
	s.Store.AppendEvents(r.Context(), name, []api.Event{{Type: api.ApprovalEvent(decision), StepKey: target.StepKey, Message: by + " " + string(decision) + "d " + target.Tool}})
	target.State = map[api.Resolution]string{api.ResolveApprove: "approved", api.ResolveDeny: "denied"}[decision]
	target.DecidedBy, target.Note = by, reason
	return target, nil
}

// consoleApprover gives the console the same approvals as the API.
type consoleApprover struct{ s *Server }

func (a consoleApprover) Approvals(ctx context.Context, run string) ([]console.Approval, error) {
	r := (&http.Request{}).WithContext(ctx)
	vs, err := a.s.approvalViews(r, run)
	if err != nil {
		return nil, err
	}
	out := make([]console.Approval, len(vs))
	for i, v := range vs {
		out[i] = console.Approval{ID: v.ID, StepKey: v.StepKey, Tool: v.Tool, Input: humanjson.String(v.Input), Reason: v.Reason, State: v.State, DecidedBy: v.DecidedBy}
	}
	return out, nil
}

func (a consoleApprover) Decide(ctx context.Context, run string, id int64, decision, reason, user string) error {
	_, err := a.s.decide((&http.Request{}).WithContext(ctx), run, id, api.Resolution(decision), reason, user)
	return err
}
