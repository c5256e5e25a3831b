package server

import (
	"context"
	"errors"
	"io"
	"net/http"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// Skill routes: POST /v2/skills stores a skill folder as its next version (the same content
// again is the version that has it), GET lists every version, GET /v2/skills/NAME[@VERSION]
// shows one whole.
func (s *Server) skillRoutes(v2 *http.ServeMux) {
	v2.HandleFunc("GET /v2/skills", s.listSkills)
	v2.HandleFunc("POST /v2/skills", s.addSkill)
	v2.HandleFunc("GET /v2/skills/{ref}", s.getSkill)
}

// maxSkillBody bounds a skill's body: its 1 MiB of files, base64 in JSON, with room to spare so
// that a folder somewhat over the limit is refused naming spec.files, not as a body too large.
const maxSkillBody = 4 << 20

func (s *Server) addSkill(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSkillBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeErr(w, api.E(api.CodeTooLarge, "spec.files", "the skill's body is over %d bytes; a skill is at most %d (1 MiB) of files in all", maxSkillBody, api.MaxSkillBytes))
			return
		}
		writeErr(w, api.Errorf(http.StatusBadRequest, api.CodeInvalid, "", "read body: %v", err))
		return
	}
	if err := api.CheckDuplicateKeys(body); err != nil {
		writeErr(w, err)
		return
	}
	var sk api.Skill
	if err := api.DecodeStrict(body, &sk); err != nil {
		writeErr(w, err)
		return
	}
	if err := api.DefaultAndValidateSkill(&sk); err != nil {
		writeErr(w, err)
		return
	}
	created, err := s.Store.PutSkill(r.Context(), &sk)
	if err != nil {
		writeErr(w, err)
		return
	}
	status, result := http.StatusOK, "unchanged"
	if created {
		status, result = http.StatusCreated, "created"
	}
	w.Header().Set("X-Agentrun-Apply", result)
	writeJSON(w, status, &sk)
}

// SkillList is GET /v2/skills: every version, files named without their contents.
type SkillList struct {
	api.TypeMeta `json:",inline"`
	Items        []api.Skill `json:"items"`
}

func (s *Server) listSkills(w http.ResponseWriter, r *http.Request) {
	l, err := s.Store.ListSkills(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	out := SkillList{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "SkillList"}, Items: []api.Skill{}}
	for _, sk := range l {
		out.Items = append(out.Items, *sk)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getSkill(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("ref")
	name, version, e := api.ParseSkillRef(ref)
	if e != nil {
		writeErr(w, e)
		return
	}
	sk, err := s.Store.GetSkill(r.Context(), name, version)
	if errors.Is(err, store.ErrNotFound) {
		writeErr(w, api.E(api.CodeNotFound, "", "skill %s is not stored (agentrun skills list shows those that are)", ref))
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sk)
}

// resolveSkills checks that every skill an agent names is stored and pins each to a version
// (NAME becomes NAME@LATEST), so a revision says which skill versions its runs read.
func (s *Server) resolveSkills(ctx context.Context, a *api.Agent) error {
	seen := map[string]bool{}
	for i, ref := range a.Spec.Skills {
		field := api.NewPath("spec", "skills").Index(i).String()
		name, version, e := api.ParseSkillRef(ref)
		if e != nil {
			e.Field = field
			return e
		}
		if seen[name] {
			return api.Invalid(field, "skill %q is named twice", name)
		}
		seen[name] = true
		sk, err := s.Store.GetSkill(ctx, name, version)
		if errors.Is(err, store.ErrNotFound) {
			what := "no version of skill " + name + " is stored"
			if version != 0 {
				what = "skill " + ref + " is not stored"
			}
			return api.Invalid(field, "%s; add it first with agentrun skills add FOLDER", what)
		}
		if err != nil {
			return err
		}
		a.Spec.Skills[i] = sk.Ref()
	}
	return nil
}
