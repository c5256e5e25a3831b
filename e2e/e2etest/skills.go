package e2etest

import (
	"os"
	"path/filepath"
	"testing"
)

const ReleaseNotesMD = `---
name: release-notes
description: Write release notes from a changelog, grouped by kind of change.
---
# Release notes

1. Read CHANGELOG.md.
2. Fill template.md.
`

func WriteSkill(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
