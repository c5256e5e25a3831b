package trigger

import (
	"slices"
	"testing"
	"time"
)

// The secrets a delivery may be signed with: the current one, and the one rotate replaced only
// until its hold ends (after that a leaked old secret no longer verifies).
func TestSigningSecretsHold(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rotated := map[string]string{SecretKey: "new", PreviousKey: "old", PreviousUntilKey: "2026-12-01T11:00:00Z"}
	cases := []struct {
		name string
		data map[string]string
		at   time.Time
		want []string
	}{
		{"during the hold", rotated, now, []string{"new", "old"}},
		{"at the hold's end", rotated, now.Add(time.Hour), []string{"new"}},
		{"after the hold", rotated, now.Add(2 * time.Hour), []string{"new"}},
		{"a previous secret without an end", map[string]string{SecretKey: "new", PreviousKey: "old"}, now, []string{"new"}},
		{"an unparsable end", map[string]string{SecretKey: "new", PreviousKey: "old", PreviousUntilKey: "tomorrow"}, now, []string{"new"}},
		{"one key of any name", map[string]string{"GITHUB_HOOK": "given"}, now, []string{"given"}},
		{"two keys, neither WEBHOOK_SECRET", map[string]string{"A": "a", "B": "b"}, now, nil},
	}
	for _, c := range cases {
		if got := signingSecrets(c.data, c.at); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
