package workflow

import "testing"

// Step keys escape "%" and "/" in a label, so a label cannot imitate nesting; other labels are
// kept as written.
func TestKeyEscapesLabels(t *testing.T) {
	for label, want := range map[string]string{"s1": "wf/s1", "a/b": "wf/a%2Fb", "50%": "wf/50%25", "%2F/": "wf/%252F%2F", "": "wf/"} {
		if got := Key("wf", label); got != want {
			t.Errorf("Key(wf, %q) = %q, want %q", label, got, want)
		}
	}
}
