package server

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/learning"
	"agentrun.dev/agentrun/internal/store"
)

// Learning routes: a learning agent's folder (internal/learning). Reads list main's files with
// their ETags (blob hashes), show one, give the log and a git bundle; retire is a commit that
// removes a file, refused unless If-Match is its current ETag; restore brings a file back as it
// was in an earlier commit.
func (s *Server) learningRoutes(v2 *http.ServeMux) {
	v2.HandleFunc("GET /v2/agents/{name}/learning", s.listLearning)
	v2.HandleFunc("GET /v2/agents/{name}/learning/log", s.learningLog)
	v2.HandleFunc("GET /v2/agents/{name}/learning/bundle", s.learningBundle)
	v2.HandleFunc("GET /v2/agents/{name}/learning/files/{path...}", s.showLearned)
	v2.HandleFunc("DELETE /v2/agents/{name}/learning/files/{path...}", s.retireLearned)
	v2.HandleFunc("POST /v2/agents/{name}/learning/restore", s.restoreLearned)
}

// LearnedItem is one file of main: a note (with its front matter), a skill's file or a workflow.
type LearnedItem struct {
	Kind        string `json:"kind"`
	Path        string `json:"path"`
	ETag        string `json:"etag"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Type        string `json:"type,omitempty"`
}

// LearningList is GET /v2/agents/{name}/learning.
type LearningList struct {
	Agent string        `json:"agent"`
	Main  string        `json:"main"`
	Items []LearnedItem `json:"items"`
}

// LearningLog is GET /v2/agents/{name}/learning/log: main's commits, newest first.
type LearningLog struct {
	Items []learning.Commit `json:"items"`
}

// LearnedFile is one file of main, whole.
type LearnedFile struct {
	Path    string `json:"path"`
	ETag    string `json:"etag"`
	Content string `json:"content"`
}

// LearningChange is the answer of a retire or a restore: the commit it made.
type LearningChange struct {
	Commit string `json:"commit"`
	Path   string `json:"path"`
}

type restoreBody struct {
	// Path is the file (or a note's name) to bring back.
	Path string `json:"path"`
	// From is the commit that holds it as it should be again.
	From string `json:"from"`
}

// openLearning reads the named agent's folder, refusing an agent without spec.learning.
func (s *Server) openLearning(w http.ResponseWriter, r *http.Request) (*learning.Repo, bool) {
	name := r.PathValue("name")
	a, err := s.Store.GetAgent(r.Context(), name)
	if err != nil {
		writeErr(w, err)
		return nil, false
	}
	if !a.Spec.Learning {
		writeErr(w, api.Errorf(http.StatusConflict, api.CodeLearningOff, "spec.learning", "agent %s has no learning folder: its spec.learning is off", name))
		return nil, false
	}
	repo, err := learning.Open(r.Context(), s.Store, name)
	if err != nil {
		writeErr(w, fmt.Errorf("learning folder of %s: %w", name, err))
		return nil, false
	}
	return repo, true
}

// learnedPath is a file's path in the folder: a bare name is a note (notes/NAME.md).
func learnedPath(p string) string {
	if !strings.Contains(p, "/") {
		return "notes/" + strings.TrimSuffix(p, ".md") + ".md"
	}
	return p
}

func kindOfPath(p string) string {
	top, _, _ := strings.Cut(p, "/")
	switch top {
	case "notes":
		return "note"
	case "skills":
		return "skill"
	}
	return "workflow"
}

func (s *Server) listLearning(w http.ResponseWriter, r *http.Request) {
	repo, ok := s.openLearning(w, r)
	if !ok {
		return
	}
	files, err := repo.Files(repo.Main)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := LearningList{Agent: r.PathValue("name"), Items: []LearnedItem{}}
	if !repo.Main.IsZero() {
		out.Main = repo.Main.String()
	}
	for _, f := range files {
		it := LearnedItem{Kind: kindOfPath(f.Path), Path: f.Path, ETag: f.ETag}
		if it.Kind == "note" {
			if n, err := learning.ParseNote(f.Content); err == nil {
				it.Name, it.Description, it.Type = n.Name, n.Description, n.Type
			}
		}
		out.Items = append(out.Items, it)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) learningLog(w http.ResponseWriter, r *http.Request) {
	repo, ok := s.openLearning(w, r)
	if !ok {
		return
	}
	log, err := repo.Log()
	if err != nil {
		writeErr(w, err)
		return
	}
	if log == nil {
		log = []learning.Commit{}
	}
	writeJSON(w, http.StatusOK, LearningLog{Items: log})
}

func (s *Server) learningBundle(w http.ResponseWriter, r *http.Request) {
	repo, ok := s.openLearning(w, r)
	if !ok {
		return
	}
	if repo.Main.IsZero() {
		writeErr(w, api.Errorf(http.StatusNotFound, api.CodeNotFound, "", "agent %s has learned nothing yet: its learning folder has no commit", r.PathValue("name")))
		return
	}
	w.Header().Set("Content-Type", "application/x-git-bundle")
	w.Header().Set("Content-Disposition", `attachment; filename="`+r.PathValue("name")+`-learning.bundle"`)
	if err := repo.WriteBundle(w); err != nil {
		// The header went out: the truncated body is all a client sees, and git refuses it.
		s.Log.Error("learning bundle", "agent", r.PathValue("name"), "err", err)
	}
}

// current finds path in main, or answers NotFound.
func current(w http.ResponseWriter, repo *learning.Repo, p string) (learning.File, bool) {
	files, err := repo.Files(repo.Main)
	if err != nil {
		writeErr(w, err)
		return learning.File{}, false
	}
	for _, f := range files {
		if f.Path == p {
			return f, true
		}
	}
	writeErr(w, api.Errorf(http.StatusNotFound, api.CodeNotFound, "path", "the learning folder's main has no %s (agentrun learning list shows what it has)", p))
	return learning.File{}, false
}

func (s *Server) showLearned(w http.ResponseWriter, r *http.Request) {
	repo, ok := s.openLearning(w, r)
	if !ok {
		return
	}
	f, ok := current(w, repo, learnedPath(r.PathValue("path")))
	if !ok {
		return
	}
	w.Header().Set("ETag", `"`+f.ETag+`"`)
	writeJSON(w, http.StatusOK, LearnedFile(f))
}

// author names who changed the folder in its commit.
func author(r *http.Request) string {
	if p := PrincipalOf(r.Context()); p.Kind == "person" && p.User != "" {
		return p.User
	}
	return "api-token"
}

func (s *Server) retireLearned(w http.ResponseWriter, r *http.Request) {
	match := strings.Trim(strings.TrimPrefix(r.Header.Get("If-Match"), "W/"), `"`)
	if match == "" {
		writeErr(w, api.Errorf(http.StatusUnprocessableEntity, api.CodeRequired, "If-Match", "retiring needs the file's current ETag in If-Match (agentrun learning list shows it)"))
		return
	}
	repo, ok := s.openLearning(w, r)
	if !ok {
		return
	}
	p := learnedPath(r.PathValue("path"))
	f, ok := current(w, repo, p)
	if !ok {
		return
	}
	if f.ETag != match {
		writeErr(w, api.Errorf(http.StatusPreconditionFailed, api.CodePreconditionFailed, "If-Match", "%s changed: its ETag is %s now, not %s; read it again", p, f.ETag, match))
		return
	}
	h, err := repo.Commit(r.Context(), []learning.Change{{Path: p, Delete: true}}, author(r), fmt.Sprintf("retire %s\n\nBy: %s\n", p, author(r)), time.Now())
	if errors.Is(err, store.ErrConflict) {
		writeErr(w, api.Errorf(http.StatusPreconditionFailed, api.CodePreconditionFailed, "If-Match", "the learning folder changed while %s was retired; read it again", p))
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, LearningChange{Commit: h.String(), Path: p})
}

func (s *Server) restoreLearned(w http.ResponseWriter, r *http.Request) {
	var body restoreBody
	raw, err := readBody(w, r)
	if err == nil {
		err = api.DecodeStrict(raw, &body)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	if b, err := hex.DecodeString(body.From); err != nil || len(b) != 20 {
		writeErr(w, api.Invalid("from", "from is a commit's 40-digit hash (agentrun learning log shows them)"))
		return
	}
	if body.Path == "" {
		writeErr(w, api.E(api.CodeRequired, "path", "path names the file to restore"))
		return
	}
	repo, ok := s.openLearning(w, r)
	if !ok {
		return
	}
	p := learnedPath(body.Path)
	old, err := repo.Files(plumbing.NewHash(body.From))
	if err == nil && old == nil {
		err = errors.New("empty commit")
	}
	if err != nil {
		writeErr(w, api.Errorf(http.StatusNotFound, api.CodeNotFound, "from", "commit %s is not in the learning folder", body.From))
		return
	}
	var change *learning.Change
	for _, f := range old {
		if f.Path == p {
			change = &learning.Change{Path: p, Content: f.Content}
		}
	}
	if change == nil {
		writeErr(w, api.Errorf(http.StatusNotFound, api.CodeNotFound, "path", "commit %s has no %s", body.From, p))
		return
	}
	h, err := repo.Commit(r.Context(), []learning.Change{*change}, author(r), fmt.Sprintf("restore %s from %s\n\nBy: %s\n", p, body.From, author(r)), time.Now())
	switch {
	case errors.Is(err, learning.ErrNoChange):
		writeJSON(w, http.StatusOK, LearningChange{Commit: repo.Main.String(), Path: p})
		return
	case errors.Is(err, store.ErrConflict):
		writeErr(w, api.Errorf(http.StatusConflict, api.CodeConflict, "", "the learning folder changed while %s was restored; try again", p))
		return
	case err != nil:
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, LearningChange{Commit: h.String(), Path: p})
}
