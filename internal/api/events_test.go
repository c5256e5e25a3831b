package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEveryEventTypeIsListed fails when an event type the server writes is not in EventTypes: it
// walks every non-test Go file of the module and checks each api.Event literal's Type (and each
// api.EventType conversion) is a listed constant, or a literal whose value is listed. A type made
// up at run time (a concatenation, a conversion of a variable) is refused: it could be anything.
func TestEveryEventTypeIsListed(t *testing.T) {
	listed := map[EventType]bool{}
	for _, e := range EventTypes {
		if listed[e.Type] {
			t.Errorf("%s is listed twice", e.Type)
		}
		listed[e.Type] = true
		if e.Meaning == "" {
			t.Errorf("%s has no meaning", e.Type)
		}
	}
	// Every EventType constant of this package is listed.
	byName := map[string]EventType{}
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range pkgs["api"].Files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "EventType" {
						continue
					}
					for i, n := range vs.Names {
						v, _ := strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
						byName[n.Name] = EventType(v)
						if !listed[EventType(v)] {
							t.Errorf("%s (%q) is not in EventTypes", n.Name, v)
						}
					}
				}
			}
		}
	}
	if len(byName) != len(EventTypes) {
		t.Errorf("%d EventType constants, %d listed", len(byName), len(EventTypes))
	}
	for _, p := range Phases {
		if Finished(p) && !listed[FinishEvent(p)] {
			t.Errorf("FinishEvent(%s) = %s, not listed", p, FinishEvent(p))
		}
	}
	for _, d := range []Resolution{ResolveApprove, ResolveDeny} {
		if !listed[ApprovalEvent(d)] {
			t.Errorf("ApprovalEvent(%s) is not listed", d)
		}
	}

	root := filepath.Join("..", "..")
	checked, found := 0, 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "vendor" || n == "testdata" || n == "node_modules" || n == "storetest" || strings.HasPrefix(n, ".") && path != root {
				return filepath.SkipDir // storetest writes made-up types to test the store itself
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return nil // a file mid-edit elsewhere is the compiler's to report
		}
		checked++
		inAPI := f.Name.Name == "api"
		isEvent := func(e ast.Expr) bool {
			switch x := e.(type) {
			case *ast.SelectorExpr:
				id, ok := x.X.(*ast.Ident)
				return ok && id.Name == "api" && x.Sel.Name == "Event"
			case *ast.Ident:
				return inAPI && x.Name == "Event"
			}
			return false
		}
		// check judges one expression that becomes an event's type.
		check := func(e ast.Expr) {
			found++
			pos := path
			switch x := e.(type) {
			case *ast.BasicLit:
				v, _ := strconv.Unquote(x.Value)
				if !listed[EventType(v)] {
					t.Errorf("%s: event type %q is not in api.EventTypes", pos, v)
				}
				return
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && id.Name == "api" {
					if v, ok := byName[x.Sel.Name]; ok && listed[v] {
						return
					}
				}
			case *ast.Ident:
				if v, ok := byName[x.Name]; ok && inAPI && listed[v] {
					return
				}
				// A variable: its assignments are checked where they are constants (typ :=
				// api.EventRunStarted); a variable of type EventType cannot hold a made-up string
				// without a conversion, which is checked below.
				return
			case *ast.CallExpr:
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "api" && (sel.Sel.Name == "FinishEvent" || sel.Sel.Name == "ApprovalEvent") {
						return
					}
				}
			}
			t.Errorf("%s: an event type made up at run time (%T): use an api.Event* constant", pos, e)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				isEv := isEvent(n.Type)
				if arr, ok := n.Type.(*ast.ArrayType); ok {
					// []api.Event{{Type: ...}}: the elements' type is elided.
					if isEvent(arr.Elt) {
						for _, el := range n.Elts {
							if cl, ok := el.(*ast.CompositeLit); ok && cl.Type == nil {
								for _, kv := range cl.Elts {
									if kv, ok := kv.(*ast.KeyValueExpr); ok {
										if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Type" {
											check(kv.Value)
										}
									}
								}
							}
						}
					}
				}
				if isEv {
					for _, el := range n.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Type" {
								check(kv.Value)
							}
						}
					}
				}
			case *ast.CallExpr:
				// api.EventType(x) makes a type from anything; only a listed literal passes.
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && len(n.Args) == 1 {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "api" && sel.Sel.Name == "EventType" {
						if _, lit := n.Args[0].(*ast.BasicLit); lit {
							check(n.Args[0])
						} else {
							t.Errorf("%s: api.EventType(%T) makes an event type from anything: use an api.Event* constant", path, n.Args[0])
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
	if checked < 50 || found < 30 {
		t.Fatalf("checked %d files and %d event types: the walk did not reach the module", checked, found)
	}
}
