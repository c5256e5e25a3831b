package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// ---- skills ----

func (s *Store) PutSkill(ctx context.Context, sk *api.Skill) (bool, error) {
	created := false
	var stored *api.Skill
	err := s.tx(ctx, func(tx pgx.Tx) error {
		created, stored = false, nil
		// Two adds of one name at once would both take the same next version: one waits.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('agentrun-skill:' || $1))`, sk.Metadata.Name); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT version, digest FROM skills WHERE name = $1`, sk.Metadata.Name)
		if err != nil {
			return err
		}
		have, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.SkillVersion, error) {
			var v store.SkillVersion
			err := r.Scan(&v.Version, &v.Digest)
			return v, err
		})
		if err != nil {
			return err
		}
		version, existing := store.NextSkillVersion(have, sk.Spec.Digest)
		if !existing {
			created = true
			paths := make([]string, len(sk.Spec.Files))
			for i, f := range sk.Spec.Files {
				paths[i] = f.Path
			}
			if _, err := tx.Exec(ctx, `INSERT INTO skills (name, version, uid, labels, description, digest, paths, files, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now())`,
				sk.Metadata.Name, version, newUID(), mustJSON(sk.Metadata.Labels), sk.Spec.Description, sk.Spec.Digest, mustJSON(paths), mustJSON(sk.Spec.Files)); err != nil {
				return err
			}
		}
		stored, err = scanSkill(tx.QueryRow(ctx, skillCols+` WHERE name = $1 AND version = $2`, sk.Metadata.Name, version), true)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("put skill %s: %w", sk.Metadata.Name, err)
	}
	*sk = *stored
	return created, nil
}

const skillCols = `SELECT name, version, uid, labels, description, digest, paths, files, created_at FROM skills`

// scanSkill reads a row of skillCols; withFiles decodes the files' contents too.
func scanSkill(row pgx.Row, withFiles bool) (*api.Skill, error) {
	var sk api.Skill
	var labels, paths []byte
	var files string
	var created time.Time
	if err := row.Scan(&sk.Metadata.Name, &sk.Spec.Version, &sk.Metadata.UID, &labels, &sk.Spec.Description, &sk.Spec.Digest, &paths, &files, &created); err != nil {
		return nil, notFound(err)
	}
	sk.APIVersion, sk.Kind = api.APIVersion, "Skill"
	ct := utc(created)
	sk.Metadata.CreationTimestamp = &ct
	if err := json.Unmarshal(labels, &sk.Metadata.Labels); err != nil {
		return nil, fmt.Errorf("decode skill %s labels: %w", sk.Metadata.Name, err)
	}
	if withFiles {
		if err := json.Unmarshal([]byte(files), &sk.Spec.Files); err != nil {
			return nil, fmt.Errorf("decode skill %s@%d files: %w", sk.Metadata.Name, sk.Spec.Version, err)
		}
		return &sk, nil
	}
	var ps []string
	if err := json.Unmarshal(paths, &ps); err != nil {
		return nil, fmt.Errorf("decode skill %s@%d paths: %w", sk.Metadata.Name, sk.Spec.Version, err)
	}
	for _, p := range ps {
		sk.Spec.Files = append(sk.Spec.Files, api.SkillFile{Path: p})
	}
	return &sk, nil
}

func (s *Store) GetSkill(ctx context.Context, name string, version int) (*api.Skill, error) {
	q, args := skillCols+` WHERE name = $1 AND version = $2`, []any{name, version}
	if version == 0 {
		q, args = skillCols+` WHERE name = $1 ORDER BY version DESC LIMIT 1`, []any{name}
	}
	sk, err := scanSkill(s.read.QueryRow(ctx, q, args...), true)
	if err != nil {
		return nil, fmt.Errorf("get skill %s@%d: %w", name, version, err)
	}
	return sk, nil
}

func (s *Store) ListSkills(ctx context.Context) ([]*api.Skill, error) {
	// The files' contents are not read: '' stands in for them.
	rows, err := s.read.Query(ctx, `SELECT name, version, uid, labels, description, digest, paths, '', created_at FROM skills ORDER BY name, version`)
	if err != nil {
		return nil, fmt.Errorf("list skills: %w", err)
	}
	defer rows.Close()
	var out []*api.Skill
	for rows.Next() {
		sk, err := scanSkill(rows, false)
		if err != nil {
			return nil, fmt.Errorf("list skills: %w", err)
		}
		out = append(out, sk)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list skills: %w", err)
	}
	return out, nil
}
