package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// ---- skills ----

func (s *Store) PutSkill(ctx context.Context, sk *api.Skill) (bool, error) {
	created := false
	var stored *api.Skill
	err := s.tx(ctx, func(tx *sql.Tx) error {
		created, stored = false, nil
		rows, err := tx.QueryContext(ctx, `SELECT version, digest FROM skills WHERE name = ?`, sk.Metadata.Name)
		if err != nil {
			return err
		}
		var have []store.SkillVersion
		for rows.Next() {
			var v store.SkillVersion
			if err := rows.Scan(&v.Version, &v.Digest); err != nil {
				rows.Close()
				return err
			}
			have = append(have, v)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		version, existing := store.NextSkillVersion(have, sk.Spec.Digest)
		if existing {
			stored, err = scanSkill(tx.QueryRowContext(ctx, skillCols+` WHERE name = ? AND version = ?`, sk.Metadata.Name, version), true)
			return err
		}
		created = true
		now := s.now()
		paths := make([]string, len(sk.Spec.Files))
		for i, f := range sk.Spec.Files {
			paths[i] = f.Path
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO skills (name, version, uid, labels, description, digest, paths, files, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			sk.Metadata.Name, version, newUID(), mustJSON(sk.Metadata.Labels), sk.Spec.Description, sk.Spec.Digest, mustJSON(paths), mustJSON(sk.Spec.Files), ms(now))
		if err != nil {
			return err
		}
		stored, err = scanSkill(tx.QueryRowContext(ctx, skillCols+` WHERE name = ? AND version = ?`, sk.Metadata.Name, version), true)
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
func scanSkill(row rowScanner, withFiles bool) (*api.Skill, error) {
	var sk api.Skill
	var labels, paths, files string
	var created int64
	if err := row.Scan(&sk.Metadata.Name, &sk.Spec.Version, &sk.Metadata.UID, &labels, &sk.Spec.Description, &sk.Spec.Digest, &paths, &files, &created); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, store.ErrNotFound
		}
		return nil, err
	}
	sk.APIVersion, sk.Kind = api.APIVersion, "Skill"
	ct := fromMS(created)
	sk.Metadata.CreationTimestamp = &ct
	if err := json.Unmarshal([]byte(labels), &sk.Metadata.Labels); err != nil {
		return nil, fmt.Errorf("decode skill %s labels: %w", sk.Metadata.Name, err)
	}
	if withFiles {
		if err := json.Unmarshal([]byte(files), &sk.Spec.Files); err != nil {
			return nil, fmt.Errorf("decode skill %s@%d files: %w", sk.Metadata.Name, sk.Spec.Version, err)
		}
		return &sk, nil
	}
	var ps []string
	if err := json.Unmarshal([]byte(paths), &ps); err != nil {
		return nil, fmt.Errorf("decode skill %s@%d paths: %w", sk.Metadata.Name, sk.Spec.Version, err)
	}
	for _, p := range ps {
		sk.Spec.Files = append(sk.Spec.Files, api.SkillFile{Path: p})
	}
	return &sk, nil
}

func (s *Store) GetSkill(ctx context.Context, name string, version int) (*api.Skill, error) {
	q, args := skillCols+` WHERE name = ? AND version = ?`, []any{name, version}
	if version == 0 {
		q, args = skillCols+` WHERE name = ? ORDER BY version DESC LIMIT 1`, []any{name}
	}
	sk, err := scanSkill(s.r.QueryRowContext(ctx, q, args...), true)
	if err != nil {
		return nil, fmt.Errorf("get skill %s@%d: %w", name, version, err)
	}
	return sk, nil
}

func (s *Store) ListSkills(ctx context.Context) ([]*api.Skill, error) {
	// The files' contents are not read: '' stands in for them.
	rows, err := s.r.QueryContext(ctx, `SELECT name, version, uid, labels, description, digest, paths, '', created_at FROM skills ORDER BY name, version`)
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
	return out, rows.Err()
}
