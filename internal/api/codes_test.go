package api

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the tables of error codes and event types in docs/limits-and-errors.md from the registries")

// codeConsts parses the package's sources and returns every constant declared with type Code,
// by Go name, with its value.
func codeConsts(t *testing.T) map[string]Code {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Code{}
	for _, f := range pkgs["api"].Files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
					continue
				}
				for i, n := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok {
						t.Fatalf("%s: a code's value must be a string literal", n.Name)
					}
					v, _ := strconv.Unquote(lit.Value)
					out[n.Name] = Code(v)
				}
			}
		}
	}
	return out
}

func TestEveryCodeIsRegistered(t *testing.T) {
	consts := codeConsts(t)
	if len(consts) == 0 {
		t.Fatal("found no Code constants: the parse is broken")
	}
	declared := map[Code]string{}
	for name, v := range consts {
		declared[v] = name
	}
	seen := map[Code]bool{}
	for _, c := range Codes {
		if seen[c.Code] {
			t.Errorf("%s is registered twice", c.Code)
		}
		seen[c.Code] = true
		if _, ok := declared[c.Code]; !ok {
			t.Errorf("%s is registered but no Code constant has it", c.Code)
		}
		if c.Status < 400 || c.Status > 599 || c.Meaning == "" || strings.Contains(c.Meaning, "|") {
			t.Errorf("%s: status %d, meaning %q: want a 4xx/5xx status and a one-line meaning with no |", c.Code, c.Status, c.Meaning)
		}
		if got := c.Code.Status(); got != c.Status {
			t.Errorf("%s.Status() = %d, registry says %d", c.Code, got, c.Status)
		}
	}
	for v, name := range declared {
		if !seen[v] {
			t.Errorf("%s (%q) is declared but not in Codes", name, v)
		}
	}
	if e := E(CodeAgentNotFound, "spec.agent", "agent %q", "x"); e.Status != 404 || e.Code != CodeAgentNotFound || e.Field != "spec.agent" {
		t.Errorf("E: %+v", e)
	}
	if Code("NoSuchCode").Status() != 500 {
		t.Error("an unregistered code is not a 500")
	}
}

// TestNoCodeOutsideTheRegistry walks every non-test Go file of the module (but this package's
// codes.go) and fails on an error code written as a string literal where an api.Code goes (the
// code argument of Errorf, E or a store refusal, a Code field) and on a Code constant declared
// anywhere else: a code that bypasses the registry is one the client and the docs do not know.
func TestNoCodeOutsideTheRegistry(t *testing.T) {
	root := filepath.Join("..", "..")
	codeArg := map[string]int{"Errorf": 1, "E": 0, "refuse": 1, "fail": 2}
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "vendor" || n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == filepath.Join(root, "internal", "api", "codes.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return nil // a file mid-edit elsewhere is the compiler's to report
		}
		checked++
		usesAPI := f.Name.Name == "api"
		for _, imp := range f.Imports {
			if imp.Path.Value == `"agentrun.dev/agentrun/internal/api"` {
				usesAPI = true
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				name := ""
				switch fn := n.Fun.(type) {
				case *ast.Ident:
					if f.Name.Name == "api" || fn.Name == "refuse" || fn.Name == "fail" && f.Name.Name == "gateway" {
						name = fn.Name
					}
				case *ast.SelectorExpr:
					if x, ok := fn.X.(*ast.Ident); ok && x.Name == "api" {
						name = fn.Sel.Name
					}
				}
				if i, ok := codeArg[name]; ok && usesAPI && i < len(n.Args) {
					if lit, ok := n.Args[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						t.Errorf("%s: %s with the code %s written as a literal: declare it in internal/api/codes.go", path, name, lit.Value)
					}
				}
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Code" && usesAPI {
					if lit, ok := n.Value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						t.Errorf("%s: Code: %s written as a literal: use a registered api.Code", path, lit.Value)
					}
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if strings.HasPrefix(id.Name, "Code") && len(id.Name) > 4 && i < len(n.Values) && usesAPI {
						if lit, ok := n.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							t.Errorf("%s: %s = %s declares an error code outside the registry", path, id.Name, lit.Value)
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files: the walk did not reach the module", checked)
	}
}

// The tables live in docs/limits-and-errors.md, between these markers.
const (
	tablesDoc       = "docs/limits-and-errors.md"
	docsCodesBegin  = "<!-- error codes: made from internal/api/codes.go; go test ./internal/api -run TestDocsTables -update-docs -->\n"
	docsCodesEnd    = "<!-- end of error codes -->\n"
	docsEventsBegin = "<!-- event types: made from internal/api/events.go; go test ./internal/api -run TestDocsTables -update-docs -->\n"
	docsEventsEnd   = "<!-- end of event types -->\n"
	webhooksDoc     = "docs/webhooks.md"
	docsHooksBegin  = "<!-- webhook events: made from internal/api/webhook.go; go test ./internal/api -run TestDocsTables -update-docs -->\n"
	docsHooksEnd    = "<!-- end of webhook events -->\n"
)

// TestDocsTables fails when the tables of error codes and of timeline event types in
// docs/limits-and-errors.md are not the registries'; -update-docs rewrites them.
func TestDocsTables(t *testing.T) {
	checkDocTables(t, tablesDoc, []docTable{{docsCodesBegin, docsCodesEnd, CodeTable()}, {docsEventsBegin, docsEventsEnd, EventTable()}})
	checkDocTables(t, webhooksDoc, []docTable{{docsHooksBegin, docsHooksEnd, WebhookEventTable()}})
}

type docTable struct{ begin, end, want string }

// checkDocTables compares (or with -update-docs rewrites) the tables of one doc.
func checkDocTables(t *testing.T, file string, tables []docTable) {
	path := filepath.Join("..", "..", filepath.FromSlash(file))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, sec := range tables {
		i, j := strings.Index(doc, sec.begin), strings.Index(doc, sec.end)
		if i < 0 || j < i {
			t.Errorf("%s has no table between %q and %q", file, sec.begin, sec.end)
			continue
		}
		if got := doc[i+len(sec.begin) : j]; got == sec.want {
			continue
		}
		if *updateDocs {
			doc = doc[:i+len(sec.begin)] + sec.want + doc[j:]
			continue
		}
		t.Errorf("%s's table after %q differs from the registry (run go test ./internal/api -run TestDocsTables -update-docs); want:\n%s", file, sec.begin, sec.want)
	}
	if *updateDocs && doc != string(b) {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
