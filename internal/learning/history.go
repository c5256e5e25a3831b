package learning

import (
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
)

// Retired is a file an earlier commit of main held that main does not hold now (a retired note,
// or one a run changed away): what a person may restore, and from which commits.
type Retired struct {
	Path string `json:"path"`
	// Commits are the commits of main's history that hold the file, newest first.
	Commits []string `json:"commits"`
}

// Retired lists the files main's history held that main does not, reading at most limit commits
// back from main (0: all), ordered by path.
func (r *Repo) Retired(limit int) ([]Retired, error) {
	log, err := r.Log()
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(log) > limit {
		log = log[:limit]
	}
	now, err := r.Files(r.Main)
	if err != nil {
		return nil, err
	}
	onMain := map[string]bool{}
	for _, f := range now {
		onMain[f.Path] = true
	}
	held := map[string][]string{}
	for _, c := range log {
		files, err := r.Files(plumbing.NewHash(c.Hash))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if !onMain[f.Path] {
				held[f.Path] = append(held[f.Path], c.Hash)
			}
		}
	}
	out := make([]Retired, 0, len(held))
	for p, cs := range held {
		out = append(out, Retired{Path: p, Commits: cs})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}
