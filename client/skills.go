package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"agentrun.dev/agentrun/internal/api"
)

// Skills is the skills resource's path segment.
const Skills = "skills"

// Skill types: a skill version (SKILL.md and the files beside it).
type (
	Skill     = api.Skill
	SkillSpec = api.SkillSpec
	SkillFile = api.SkillFile
)

// AddSkill stores a skill folder's files as the skill's next version; the same content again is
// the version that has it (Unchanged).
func (c *Client) AddSkill(ctx context.Context, s *Skill) (*Skill, ApplyResult, error) {
	var out Skill
	hdr, status, err := c.call(ctx, request{method: http.MethodPost, path: "/v2/" + Skills, body: s}, &out)
	if err != nil {
		return nil, "", fmt.Errorf("add skill %s: %w", s.Metadata.Name, err)
	}
	res := ApplyResult(hdr.Get(ApplyHeader))
	if res == "" {
		res = Unchanged
		if status == http.StatusCreated {
			res = Created
		}
	}
	return &out, res, nil
}

// ListSkills lists every stored version of every skill (files named, without their contents).
func (c *Client) ListSkills(ctx context.Context) ([]Skill, error) {
	l, err := decodeInto[List[Skill]](c.ListObjects(ctx, Skills, nil))
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// GetSkill returns NAME or NAME@VERSION (NAME alone: the latest version), files and all.
func (c *Client) GetSkill(ctx context.Context, ref string) (*Skill, error) {
	var out Skill
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: "/v2/" + Skills + "/" + url.PathEscape(ref)}, &out); err != nil {
		return nil, fmt.Errorf("get skill %s: %w", ref, err)
	}
	return &out, nil
}
