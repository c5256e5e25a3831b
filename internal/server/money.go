package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/store"
)

func (s *Server) prices() *cost.Table {
	if s.Prices == nil {
		return cost.Default()
	}
	return s.Prices
}

// checkModel refuses, at run creation, a capped run on a model the price table does not know
// (unless the agent allows unpriced models), and a BYOK run whose secret is missing.
func (s *Server) checkModel(ctx context.Context, spec *api.AgentSpec) error {
	if spec.Model.Access == api.AccessBYOK {
		if _, err := s.Store.GetSecret(ctx, spec.Model.APIKeySecret); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return api.Errorf(http.StatusUnprocessableEntity, api.CodeSecretNotFound, "spec.model.apiKeySecret",
					"secret %q does not exist: a signed-in person must set it first (PUT /v2/secrets/%s with the key under ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY)",
					spec.Model.APIKeySecret, spec.Model.APIKeySecret)
			}
			return err
		}
		return nil
	}
	if s.Models == nil {
		return nil
	}
	res, err := s.Models.Choose(string(spec.Model.Provider), spec.Model.Name, spec.Model.Families)
	if err != nil || res.Routed {
		return nil // no provider: the run fails with ModelError and says which key to set
	}
	if _, ok := s.prices().Lookup(res.Model); !ok && !spec.AllowUnpricedModels {
		return api.Errorf(http.StatusUnprocessableEntity, api.CodeUnpricedModel, "spec.model.name",
			"model %q is not in the price table (version %s), so a cap cannot hold its cost: add it with --prices FILE, or set allowUnpricedModels: true on the agent to run it with its cost shown as unknown",
			res.Model, s.prices().Version)
	}
	return nil
}

// raiseCap applies a merge patch that may only raise the run's own spec.maxCostUSD.
func (s *Server) raiseCap(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	refuse := func(field string) {
		writeErr(w, api.Errorf(http.StatusConflict, api.CodeConflict, field, "a run's spec cannot change after it is created, except raising its cap: {\"spec\": {\"maxCostUSD\": \"2.00\"}}"))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		writeErr(w, api.Errorf(http.StatusBadRequest, api.CodeInvalid, "", "body is not a JSON object: %v", err))
		return
	}
	for k := range top {
		if k != "spec" {
			refuse(k)
			return
		}
	}
	var spec map[string]json.RawMessage
	if err := json.Unmarshal(top["spec"], &spec); err != nil || len(spec) == 0 {
		refuse("spec")
		return
	}
	for k := range spec {
		if k != "maxCostUSD" {
			refuse("spec." + k)
			return
		}
	}
	var capUSD string
	if err := json.Unmarshal(spec["maxCostUSD"], &capUSD); err != nil {
		writeErr(w, api.Errorf(http.StatusUnprocessableEntity, api.CodeWrongType, "spec.maxCostUSD", "spec.maxCostUSD must be a decimal string such as \"2.00\""))
		return
	}
	run, err := s.raiseRunCap(r.Context(), r.PathValue("name"), capUSD)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

// raiseRunCap raises run name's cap to capUSD (a decimal string), the one rule for the API and the
// console: never lower, never a finished run's, never a group member's.
func (s *Server) raiseRunCap(ctx context.Context, name, capUSD string) (*api.AgentRun, error) {
	newCap, err := cost.ParseUSDStrict(capUSD)
	if err != nil {
		return nil, api.Invalid("spec.maxCostUSD", "%v", err)
	}
	run, err := s.Store.RaiseRunCap(ctx, name, newCap.String(), func(cur *api.AgentRun) error {
		if api.Finished(cur.Status.Phase) {
			return store.ErrFinished
		}
		if cur.Spec.Group != "" {
			// The group admitted this run against its cap: a higher cap could overspend the group's.
			return api.Errorf(http.StatusConflict, api.CodeConflict, "spec.maxCostUSD", "run %q belongs to group %q, whose cost cap counts this run's cap as admitted; cancel it and add a new run instead", cur.Metadata.Name, cur.Spec.Group)
		}
		old, err := cost.ParseUSD(cur.Spec.MaxCostUSD)
		if err == nil && newCap < old {
			return api.Errorf(http.StatusUnprocessableEntity, api.CodeCapNotRaised, "spec.maxCostUSD", "the cap can only be raised: it is $%s, and $%s is lower", old, newCap)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.Store.AppendEvents(ctx, name, []api.Event{{Type: api.EventRunCapRaised, Message: "the run's cap was raised to $" + newCap.String()}})
	return run, nil
}

// consoleRaiseCap is the run page's "raise the cap", by a signed-in person.
func (s *Server) consoleRaiseCap(ctx context.Context, run, capUSD, user string) error {
	_, err := s.raiseRunCap(ctx, run, capUSD)
	return err
}

// creditsView is GET /v2/credits with the last limit ledger entries.
func (s *Server) creditsView(ctx context.Context, limit int) (*api.Credits, error) {
	b, entries, err := s.Store.Credits(ctx, limit)
	if err != nil {
		return nil, err
	}
	rs, err := s.Store.ListReservations(ctx)
	if err != nil {
		return nil, err
	}
	bal := cost.Micros(b.Added - b.Charged)
	v := &api.Credits{Enforced: b.Enforced, BalanceUSD: bal.String(), AddedUSD: cost.Micros(b.Added).String(),
		ReservedUSD: cost.Micros(b.Reserved).String(), AvailableUSD: (bal - cost.Micros(b.Reserved)).String(),
		UnpricedCharges: b.UnknownCharges, Entries: []api.CreditEntry{}, Reservations: []api.CreditReservation{}}
	charged := cost.Total{Known: cost.Micros(b.Charged), Unknown: int(b.UnknownCharges)}
	v.ChargedUSD = charged.String()
	if b.UnknownCharges > 0 {
		v.BalanceUSD = "at most " + v.BalanceUSD
		v.AvailableUSD = "at most " + v.AvailableUSD
	}
	for _, e := range entries {
		ev := api.CreditEntry{Seq: e.Seq, Time: e.Time.Format("2006-01-02T15:04:05.000Z07:00"), Kind: e.Kind, Run: e.Run, StepKey: e.StepKey, Note: e.Note, AmountUSD: "unknown"}
		if e.Amount != nil {
			ev.AmountUSD = cost.Micros(*e.Amount).String()
		}
		v.Entries = append(v.Entries, ev)
	}
	for _, r := range rs {
		v.Reservations = append(v.Reservations, api.CreditReservation{Run: r.Run, StepKey: r.StepKey, Attempt: r.Attempt, AmountUSD: cost.Micros(r.Amount).String()})
	}
	return v, nil
}

func (s *Server) getCredits(w http.ResponseWriter, r *http.Request) {
	limit := 20
	if q := r.URL.Query().Get("limit"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 0 {
			writeErr(w, api.Invalid("limit", "limit must be a non-negative integer (0: the whole ledger)"))
			return
		}
		limit = n
	}
	v, err := s.creditsView(r.Context(), limit)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

type addCreditsBody struct {
	AmountUSD string `json:"amountUSD"`
	Note      string `json:"note,omitempty"`
}

// addCredits is POST /v2/credits {"amountUSD": "5.00"}: runs waiting on credits continue.
func (s *Server) addCredits(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var b addCreditsBody
	if err := api.DecodeStrict(body, &b); err != nil {
		writeErr(w, err)
		return
	}
	if b.AmountUSD == "" {
		writeErr(w, api.Errorf(http.StatusUnprocessableEntity, api.CodeRequired, "amountUSD", "amountUSD is required, as a decimal string such as \"5.00\""))
		return
	}
	amt, err := cost.ParseUSDStrict(b.AmountUSD)
	if err != nil {
		writeErr(w, api.Invalid("amountUSD", "%v", err))
		return
	}
	if amt <= 0 {
		writeErr(w, api.Invalid("amountUSD", "amountUSD must be more than zero"))
		return
	}
	if len(b.Note) > 500 {
		writeErr(w, api.Invalid("note", "note is longer than 500 characters"))
		return
	}
	if _, err := s.Store.AddCredits(r.Context(), int64(amt), b.Note); err != nil {
		writeErr(w, err)
		return
	}
	v, err := s.creditsView(r.Context(), 20)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, v)
}

func (s *Server) getPrices(w http.ResponseWriter, r *http.Request) {
	t := s.prices()
	writeJSON(w, http.StatusOK, map[string]any{"version": t.Version, "unit": "micro-dollars per million tokens",
		"markup":   "server access is billed at cost / 0.875 (cost × 8 / 7, rounded up to the micro-dollar)",
		"families": t.Families, "models": t.Entries()})
}

type secretBody struct {
	Data map[string]string `json:"data"`
}

// listSecrets is GET /v2/secrets: names and key names only; values are never shown.
func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) {
	list, err := s.Store.ListSecrets(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	items := []api.SecretInfo{}
	for _, si := range list {
		if secret.Listed(si.Name) {
			items = append(items, si)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

// putSecret is PUT /v2/secrets/NAME {"data": {"ANTHROPIC_API_KEY": "..."}}: a signed-in person
// only (the API token cannot write a secret). The value is sealed before it is stored.
func (s *Server) putSecret(w http.ResponseWriter, r *http.Request) {
	if _, ok := requirePerson(w, r, "write a secret"); !ok {
		return
	}
	name := r.PathValue("name")
	if err := api.ValidName("metadata.name", name); err != nil {
		writeErr(w, err)
		return
	}
	if s.Seal == nil {
		writeErr(w, api.Errorf(http.StatusServiceUnavailable, api.CodeInternal, "", "this server has no seal key"))
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var b secretBody
	if err := api.DecodeStrict(body, &b); err != nil {
		writeErr(w, err)
		return
	}
	if len(b.Data) == 0 {
		writeErr(w, api.Errorf(http.StatusUnprocessableEntity, api.CodeRequired, "data", "data is required: {\"data\": {\"ANTHROPIC_API_KEY\": \"...\"}}"))
		return
	}
	for k, v := range b.Data {
		if err := secret.CheckEntry(k, v); err != nil {
			writeErr(w, api.Invalid(api.NewPath("data").Member(k).String(), "%s", err.Error()))
			return
		}
	}
	sealed, keys, err := s.Seal.SealMap(name, b.Data)
	if err != nil {
		writeErr(w, err)
		return
	}
	if err := s.Store.PutSecret(r.Context(), name, sealed, keys); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "keys": keys, "set": true})
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) {
	if _, ok := requirePerson(w, r, "remove a secret"); !ok {
		return
	}
	if err := s.Store.DeleteSecret(r.Context(), r.PathValue("name")); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": r.PathValue("name"), "deleted": true})
}
