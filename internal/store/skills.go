package store

import (
	"context"

	"agentrun.dev/agentrun/internal/api"
)

// Skills keeps skills, numbered versions per name, each immutable.
type Skills interface {
	// PutSkill stores s (validated, its digest set) as its name's next version, unless a stored
	// version has the same digest: then nothing is written and s becomes that version (created
	// false). On success s is what is stored (version, uid, creationTimestamp).
	PutSkill(ctx context.Context, s *api.Skill) (created bool, err error)
	// GetSkill returns NAME@VERSION, whole; version 0 is the latest. ErrNotFound when absent.
	GetSkill(ctx context.Context, name string, version int) (*api.Skill, error)
	// ListSkills returns every version of every skill, ordered by name and version, without the
	// files' contents (their paths are kept).
	ListSkills(ctx context.Context) ([]*api.Skill, error)
}

// SkillVersion is one stored version's number and digest, as a backend reads them to place a new one.
type SkillVersion struct {
	Version int
	Digest  string
}

// NextSkillVersion is the rule PutSkill follows: the version already holding digest (existing
// true), else one past the highest stored.
func NextSkillVersion(stored []SkillVersion, digest string) (version int, existing bool) {
	top := 0
	for _, v := range stored {
		if v.Digest == digest {
			return v.Version, true
		}
		top = max(top, v.Version)
	}
	return top + 1, false
}
