package client

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/api"
)

// constsOf parses a package's non-test sources and returns each constant's name with its value
// expression.
func constsOf(t *testing.T, dir string) map[string]ast.Expr {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ast.Expr{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
					for _, s := range g.Specs {
						vs := s.(*ast.ValueSpec)
						for i, n := range vs.Names {
							if i < len(vs.Values) {
								out[n.Name] = vs.Values[i]
							}
						}
					}
				}
			}
		}
	}
	return out
}

// TestClientExportsEveryCode fails when a code of the registry (internal/api/codes.go) has no
// client.Code* constant of the same name standing for it, so a program outside the module can
// match every code the server sends.
func TestClientExportsEveryCode(t *testing.T) {
	apiConsts := constsOf(t, filepath.Join("..", "internal", "api"))
	byValue := map[string]string{}
	for name, v := range apiConsts {
		if lit, ok := v.(*ast.BasicLit); ok && strings.HasPrefix(name, "Code") {
			byValue[strings.Trim(lit.Value, `"`)] = name
		}
	}
	mine := constsOf(t, ".")
	if len(api.Codes) < 30 {
		t.Fatalf("the registry has %d codes", len(api.Codes))
	}
	for _, c := range api.Codes {
		name, ok := byValue[string(c.Code)]
		if !ok {
			t.Errorf("%s is registered but no api.Code* constant holds it", c.Code)
			continue
		}
		v, ok := mine[name]
		sel, isSel := v.(*ast.SelectorExpr)
		if !ok || !isSel || sel.Sel.Name != name || sel.X.(*ast.Ident).Name != "api" {
			t.Errorf("client.%s = api.%s is missing (the code %s)", name, name, c.Code)
		}
	}
	if len(Codes) != len(api.Codes) {
		t.Errorf("client.Codes has %d entries, the registry %d", len(Codes), len(api.Codes))
	}
}
