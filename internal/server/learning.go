package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/console"
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

// The learning folder's shapes are the API's (internal/api), named here for the OpenAPI table.
type (
	LearnedItem    = api.LearnedItem
	LearningList   = api.LearningList
	LearningChange = api.LearningChange
	LearningLog    = api.LearningLog
	LearnedFile    = api.LearnedFile
)

type restoreBody struct {
	// Path is the file (or a note's name) to bring back.
	Path string `json:"path"`
	// From is the commit that holds it as it should be again: its hash, whole or its first 7 or
	// more hex digits.
	From string `json:"from"`
}

// openLearning reads the named agent's folder, refusing an agent without spec.learning.
func (s *Server) openLearning(w http.ResponseWriter, r *http.Request) (*learning.Repo, bool) {
	repo, err := s.learningFolder(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return nil, false
	}
	return repo, true
}

// learningFolder reads agent's folder, refusing an agent without spec.learning.
func (s *Server) learningFolder(ctx context.Context, name string) (*learning.Repo, error) {
	a, err := s.Store.GetAgent(ctx, name)
	if err != nil {
		return nil, err
	}
	if !a.Spec.Learning {
		return nil, api.Errorf(http.StatusConflict, api.CodeLearningOff, "spec.learning", "agent %s has no learning folder: its spec.learning is off", name)
	}
	repo, err := learning.Open(ctx, s.Store, name)
	if err != nil {
		return nil, fmt.Errorf("learning folder of %s: %w", name, err)
	}
	return repo, nil
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
	out, err := listOf(r.PathValue("name"), repo)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// listOf is main's files with their ETags, and each note's front matter.
func listOf(agent string, repo *learning.Repo) (LearningList, error) {
	files, err := repo.Files(repo.Main)
	if err != nil {
		return LearningList{}, err
	}
	out := LearningList{Agent: agent, Items: []LearnedItem{}}
	if !repo.Main.IsZero() {
		out.Main = repo.Main.String()
	}
	for _, f := range files {
		it := LearnedItem{Kind: kindOfPath(f.Path), Path: f.Path, ETag: f.ETag, Problem: learning.PathProblem(f.Path)}
		if it.Kind == "note" {
			if n, err := learning.ParseNote(f.Content); err == nil {
				it.Name, it.Description, it.Type = n.Name, n.Description, n.Type
			}
		}
		out.Items = append(out.Items, it)
	}
	return out, nil
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

// current finds path in main, or is NotFound.
func current(repo *learning.Repo, p string) (learning.File, error) {
	files, err := repo.Files(repo.Main)
	if err != nil {
		return learning.File{}, err
	}
	for _, f := range files {
		if f.Path == p {
			return f, nil
		}
	}
	return learning.File{}, api.Errorf(http.StatusNotFound, api.CodeNotFound, "path", "the learning folder's main has no %s (agentrun learning list shows what it has)", p)
}

func (s *Server) showLearned(w http.ResponseWriter, r *http.Request) {
	repo, ok := s.openLearning(w, r)
	if !ok {
		return
	}
	f, err := current(repo, learnedPath(r.PathValue("path")))
	if err != nil {
		writeErr(w, err)
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
	ch, err := s.retire(r.Context(), r.PathValue("name"), r.PathValue("path"), match, author(r))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ch)
}

// retire is a commit by who that removes path (a bare name is a note) from agent's main, if
// etag is still its ETag: the API's DELETE and the console's Retire button.
func (s *Server) retire(ctx context.Context, agent, path, etag, who string) (LearningChange, error) {
	if etag == "" {
		return LearningChange{}, api.Errorf(http.StatusUnprocessableEntity, api.CodeRequired, "If-Match", "retiring needs the file's current ETag in If-Match (agentrun learning list shows it)")
	}
	repo, err := s.learningFolder(ctx, agent)
	if err != nil {
		return LearningChange{}, err
	}
	p := learnedPath(path)
	f, err := current(repo, p)
	if err != nil {
		return LearningChange{}, err
	}
	if f.ETag != etag {
		return LearningChange{}, api.Errorf(http.StatusPreconditionFailed, api.CodePreconditionFailed, "If-Match", "%s changed: its ETag is %s now, not %s; read it again", p, f.ETag, etag)
	}
	h, err := repo.Commit(ctx, []learning.Change{{Path: p, Delete: true}}, who, fmt.Sprintf("retire %s\n\nBy: %s\n", p, who), time.Now())
	if errors.Is(err, store.ErrConflict) {
		return LearningChange{}, api.Errorf(http.StatusPreconditionFailed, api.CodePreconditionFailed, "If-Match", "the learning folder changed while %s was retired; read it again", p)
	}
	if err != nil {
		return LearningChange{}, err
	}
	return LearningChange{Commit: h.String(), Path: p}, nil
}

func (s *Server) restoreLearned(w http.ResponseWriter, r *http.Request) {
	var body restoreBody
	raw, err := readBody(w, r)
	if err == nil {
		err = api.DecodeStrict(raw, &body)
	}
	if err == nil {
		var ch LearningChange
		if ch, err = s.restore(r.Context(), r.PathValue("name"), body.Path, body.From, author(r)); err == nil {
			writeJSON(w, http.StatusOK, ch)
			return
		}
	}
	writeErr(w, err)
}

// restore is a commit by who that brings path (a bare name is a note) back to agent's main as
// commit from held it: the API's POST .../restore and the console's Restore button.
func (s *Server) restore(ctx context.Context, agent, path, from, who string) (LearningChange, error) {
	if from == "" {
		return LearningChange{}, api.E(api.CodeRequired, "from", "from names the commit that holds the file as it should be (agentrun learning log shows them)")
	}
	if path == "" {
		return LearningChange{}, api.E(api.CodeRequired, "path", "path names the file to restore")
	}
	repo, err := s.learningFolder(ctx, agent)
	if err != nil {
		return LearningChange{}, err
	}
	p := learnedPath(path)
	if why := learning.PathProblem(p); why != "" {
		// Such a file is only ever retired: a run would not be offered it.
		return LearningChange{}, api.Invalid("path", "%q cannot be restored: %s", p, why)
	}
	commit, err := repo.ResolveCommit(from)
	switch {
	case errors.Is(err, learning.ErrCommitName):
		return LearningChange{}, api.Invalid("from", "from %q is not a commit's hash: give it whole or its first %d or more hex digits (agentrun learning log shows them)", from, learning.MinCommitPrefix)
	case errors.Is(err, learning.ErrAmbiguousCommit):
		return LearningChange{}, api.Invalid("from", "%s", strings.TrimPrefix(err.Error(), learning.ErrAmbiguousCommit.Error()+": "))
	case err != nil && !errors.Is(err, learning.ErrUnknownCommit):
		return LearningChange{}, err
	}
	var old []learning.File
	if err == nil {
		old, err = repo.Files(commit)
		if err == nil && old == nil {
			err = errors.New("empty commit")
		}
	}
	if err != nil {
		return LearningChange{}, api.Errorf(http.StatusNotFound, api.CodeNotFound, "from", "commit %s is not in the learning folder", from)
	}
	from = commit.String()
	var change *learning.Change
	for _, f := range old {
		if f.Path == p {
			change = &learning.Change{Path: p, Content: f.Content}
		}
	}
	if change == nil {
		return LearningChange{}, api.Errorf(http.StatusNotFound, api.CodeNotFound, "path", "commit %s has no %s", from, p)
	}
	h, err := repo.Commit(ctx, []learning.Change{*change}, who, fmt.Sprintf("restore %s from %s\n\nBy: %s\n", p, from, who), time.Now())
	switch {
	case errors.Is(err, learning.ErrNoChange):
		return LearningChange{Commit: repo.Main.String(), Path: p}, nil
	case errors.Is(err, store.ErrConflict):
		return LearningChange{}, api.Errorf(http.StatusConflict, api.CodeConflict, "", "the learning folder changed while %s was restored; try again", p)
	case err != nil:
		return LearningChange{}, err
	}
	return LearningChange{Commit: h.String(), Path: p}, nil
}

// consoleLearning gives the console's Learning tab the API's reads, retire and restore.
type consoleLearning struct{ s *Server }

// Folder is the agent's main (as GET .../learning lists it), its log and what it retired.
func (c consoleLearning) Folder(ctx context.Context, agent string) (console.LearningFolder, error) {
	repo, err := c.s.learningFolder(ctx, agent)
	if err != nil {
		return console.LearningFolder{}, answerErr(err)
	}
	list, err := listOf(agent, repo)
	if err != nil {
		return console.LearningFolder{}, err
	}
	log, err := repo.Log()
	if err != nil {
		return console.LearningFolder{}, err
	}
	retired, err := repo.Retired(consoleLogDepth)
	if err != nil {
		return console.LearningFolder{}, err
	}
	return console.LearningFolder{List: list, Log: log, Retired: retired}, nil
}

// consoleLogDepth is how many commits back the console looks for retired files.
const consoleLogDepth = 200

func (c consoleLearning) Retire(ctx context.Context, agent, path, etag, user string) (api.LearningChange, error) {
	ch, err := c.s.retire(ctx, agent, path, etag, user)
	return ch, answerErr(err)
}

func (c consoleLearning) Restore(ctx context.Context, agent, path, from, user string) (api.LearningChange, error) {
	ch, err := c.s.restore(ctx, agent, path, from, user)
	return ch, answerErr(err)
}

// answerErr is err as the API answers it (an *api.Error; a store error mapped), nil for nil.
func answerErr(err error) error {
	if err == nil {
		return nil
	}
	if e, ok := api.AsError(err); ok {
		return e
	}
	return storeErr(err)
}
