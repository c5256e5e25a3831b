package fake

import "testing"

// A routing call matches only entries written for routing calls; catch-alls never answer one.
func TestRouterCallsMatchOnlyRouterEntries(t *testing.T) {
	t.Parallel()
	sc, err := ParseScript([]byte(`
entries:
  - name: all
    match: "*"
    turns: [{text: "agent answer"}]
  - name: route-fix
    match: "Route this request: Fix"
    turns: [{text: '{"family": "opus", "confidence": 0.8}'}]
  - name: route-any
    match: "Route this request"
    turns: [{text: '{"family": "haiku", "confidence": 0.6}'}]
`))
	if err != nil {
		t.Fatal(err)
	}
	for first, want := range map[string]string{
		"Fix the bug":                          "all",
		"Route this request: Fix the bug":      "route-fix",
		"Route this request: What time is it?": "route-any",
	} {
		idx := -1
		for i := range sc.Entries {
			if sc.Entries[i].matches(first) {
				idx = i
				break
			}
		}
		if idx < 0 || sc.Entries[idx].Name != want {
			t.Errorf("%q matched entry %d, want %s", first, idx, want)
		}
	}
	only := &Entry{Match: "*"}
	if only.matches(RouterPrefix + ": anything") {
		t.Error("a catch-all answered a routing call")
	}
}
