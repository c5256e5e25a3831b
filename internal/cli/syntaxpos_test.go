package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A JSON syntax error names the line and column of the bad character: the decoder's own offset
// fell a line or more early ("2:7" for an "@" at 3:10). The summary counts "1 error".
func TestWorkflowsValidateSyntaxPosition(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ doc, bad string }{
		{"{\n  \"v\": 2,\n  \"x\": [ @ ]\n}\n", "@"}, // 3:10
		{"{\n  \"v\": 2,\n  \"name\": \"w\",\n  \"input\": {\"type\": \"object\"},\n  \"root\": {\"kind\": \"sequence\",\n    \"steps\": [{\"kind\": \"tool\", \"tool\": \"fetch\", \"args\": @}]}\n}\n", "@"},
		{"{\"v\": 2, \"name\": \"w\", \"x\": tru@}", "@"},
		{"{\"v\": 2,\n \"name\": \"w\\q\"}", "q"},
	} {
		// Where the bad character is, counted here: line, and column from 1.
		i := strings.Index(c.doc, c.bad)
		at := fmt.Sprintf(":%d:%d: json_syntax", strings.Count(c.doc[:i], "\n")+1, i-strings.LastIndex(c.doc[:i], "\n"))
		f := filepath.Join(dir, "w.json")
		if err := os.WriteFile(f, []byte(c.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		root, out, _ := newRoot()
		root.SetArgs([]string{"workflows", "validate", f})
		err := root.Execute()
		var summary bytes.Buffer
		if code := Report(err, &summary); code != ExitFailure {
			t.Errorf("%q: exit %d (%v), want %d", c.doc, code, err, ExitFailure)
		}
		if !strings.HasPrefix(out.String(), f+at) || !strings.HasSuffix(out.String(), "\n") {
			t.Errorf("%q: stdout %q, want a line starting %s", c.doc, out, f+at)
		}
		if s := summary.String(); !strings.Contains(s, ": 1 error") || strings.Contains(s, "1 errors") {
			t.Errorf("%q: summary %q, want \"1 error\"", c.doc, s)
		}
	}
}
