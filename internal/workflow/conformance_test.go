package workflow

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// resolveTestdata resolves a named child to testdata/children/NAME.json.
func resolveTestdata(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join("testdata", "children", filepath.Base(name)+".json"))
}

// TestConformance validates every document of testdata/conformance: a valid one must validate,
// an invalid one must report its expected code at its expected pointer (among its errors).
func TestConformance(t *testing.T) {
	f, err := os.Open("testdata/conformance/expect.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, valid, invalid := 0, 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 3 {
			t.Fatalf("expect.tsv: bad line %q", line)
		}
		file, code, ptr := cols[0], cols[1], cols[2]
		n++
		t.Run(strings.TrimSuffix(file, ".json"), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata/conformance", file))
			if err != nil {
				t.Fatal(err)
			}
			w, errs := Validate(raw, Options{Resolve: resolveTestdata})
			if code == "valid" {
				valid++
				if len(errs) > 0 || w == nil {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			invalid++
			if len(errs) == 0 {
				t.Fatalf("want %s at %q, got valid", code, ptr)
			}
			for _, e := range errs {
				if e.Line < 1 || e.Column < 1 || strings.TrimSpace(e.Message) == "" {
					t.Errorf("error without a position or a sentence: %+v", e)
				}
			}
			for _, e := range errs {
				if e.Code == code && e.Pointer == ptr {
					return
				}
			}
			t.Fatalf("want %s at %q, got %v", code, ptr, errs)
		})
	}
	if n < 60 {
		t.Fatalf("the conformance table has %d documents, want at least 60", n)
	}
	t.Logf("%d documents: %d valid, %d invalid", n, valid, invalid)
}
