package server

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/auth"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

// registeredPatterns reads every mux registration in the package's source: each HandleFunc or
// Handle call's pattern. A pattern that is not a string literal fails the test, so no route can
// be registered out of this test's sight.
func registeredPatterns(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "HandleFunc" && sel.Sel.Name != "Handle") || len(call.Args) != 2 {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Errorf("%s: a route registered with a pattern that is not a string literal: the OpenAPI test cannot see it", fset.Position(call.Pos()))
				return true
			}
			p, _ := strconv.Unquote(lit.Value)
			out = append(out, p)
			return true
		})
	}
	return out
}

// TestOpenAPIRoutes fails when a route the server registers is not in the document, or the
// document lists one the server does not register.
func TestOpenAPIRoutes(t *testing.T) {
	registered := map[string]bool{}
	for _, p := range registeredPatterns(t) {
		if !strings.Contains(p, " ") {
			// The catch-all ("/v2/") answers 404 or 405 for what no route takes; the document
			// says so in its description.
			if p != "/v2/" {
				t.Errorf("route %q is registered for every method: give it one", p)
			}
			continue
		}
		registered[p] = true
	}
	if len(registered) < 40 {
		t.Fatalf("found only %d registrations in the source; the scan is broken", len(registered))
	}
	documented := map[string]bool{}
	for _, r := range apiRoutes {
		if documented[r.Pattern] {
			t.Errorf("%s is documented twice", r.Pattern)
		}
		documented[r.Pattern] = true
		if !registered[r.Pattern] {
			t.Errorf("%s is in the OpenAPI document but the server registers no such route", r.Pattern)
		}
	}
	for p := range registered {
		if !documented[p] {
			t.Errorf("%s is registered but not in the OpenAPI document (add it to apiRoutes in openapi.go)", p)
		}
	}

	// And at run time: each documented route reaches a handler, not the catch-all's 404 or 405.
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "agentrun.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	accounts, err := auth.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Store: st, Token: testToken, BaseURL: "http://agentrun.test", DataDir: t.TempDir(), Accounts: accounts,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	for _, r := range apiRoutes {
		method, path, _ := strings.Cut(r.Pattern, " ")
		for _, p := range pathParams(path) {
			path = strings.Replace(path, "{"+p+"}", "x1", 1)
			path = strings.Replace(path, "{"+p+"...}", "x1", 1)
		}
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", r.Pattern, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotFound && bytes.Contains(b, []byte("no API route")) {
			t.Errorf("%s %s: the catch-all answered %d %s: the documented route is not registered", method, path, resp.StatusCode, b)
		}
	}
}

// TestOpenAPIDocument builds the document the server serves and checks it: it is OpenAPI 3.1,
// every schema in it compiles as JSON Schema 2020-12, every route lists its error codes (all in
// the registry), and a Go type reached by reflection that reads or writes its own JSON has its
// schema given (else the build reports it).
func TestOpenAPIDocument(t *testing.T) {
	doc, errs := buildOpenAPI()
	for _, err := range errs {
		t.Error(err)
	}
	raw, err := openAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi %v, want 3.1.0", doc["openapi"])
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "http://agentrun.test/openapi.json"
	if err := c.AddResource(url, inst); err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Paths map[string]map[string]struct {
			RequestBody *struct {
				Content map[string]json.RawMessage
			}
			Responses map[string]struct {
				Content map[string]struct {
					Schema json.RawMessage
				}
			}
		}
		Components struct{ Schemas map[string]json.RawMessage }
	}
	if err := json.Unmarshal(raw, &parsed); err != nil {
		t.Fatal(err)
	}
	esc := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1") }
	for name := range parsed.Components.Schemas {
		if _, err := c.Compile(url + "#/components/schemas/" + esc(name)); err != nil {
			t.Errorf("components/schemas/%s: %v", name, err)
		}
	}
	known := map[string]bool{}
	for _, ci := range api.Codes {
		known[string(ci.Code)] = true
	}
	ops := 0
	for path, item := range parsed.Paths {
		for method, op := range item {
			ops++
			if op.RequestBody != nil {
				for ct := range op.RequestBody.Content {
					ptr := "#/paths/" + esc(path) + "/" + method + "/requestBody/content/" + esc(ct) + "/schema"
					if _, err := c.Compile(url + ptr); err != nil {
						t.Errorf("%s %s request: %v", method, path, err)
					}
				}
			}
			sawError, sawJSON := false, false
			for status, resp := range op.Responses {
				for ct, m := range resp.Content {
					sawJSON = sawJSON || ct == "application/json"
					ptr := "#/paths/" + esc(path) + "/" + method + "/responses/" + status + "/content/" + esc(ct) + "/schema"
					if _, err := c.Compile(url + ptr); err != nil {
						t.Errorf("%s %s %s: %v", method, path, status, err)
					}
					if status >= "400" && ct == "application/json" {
						sawError = true
						var s struct {
							Properties struct{ Code struct{ Enum []string } }
						}
						json.Unmarshal(m.Schema, &s)
						if len(s.Properties.Code.Enum) == 0 {
							t.Errorf("%s %s %s lists no error code", method, path, status)
						}
						for _, code := range s.Properties.Code.Enum {
							if !known[code] {
								t.Errorf("%s %s %s: code %s is not in api.Codes", method, path, status, code)
							}
							info, _ := api.LookupCode(api.Code(code))
							if st := strconv.Itoa(info.Status); st != status && !slices.ContainsFunc(info.Also, func(a int) bool { return strconv.Itoa(a) == status }) {
								t.Errorf("%s %s: code %s under status %s, but the registry sends it with %d %v", method, path, code, status, info.Status, info.Also)
							}
						}
					}
				}
			}
			// A route that answers only text (health, metrics) has no JSON error to list.
			if !sawError && sawJSON {
				t.Errorf("%s %s documents no error answer", method, path)
			}
		}
	}
	if ops != len(apiRoutes) {
		t.Errorf("the document has %d operations, apiRoutes %d", ops, len(apiRoutes))
	}
	// The API's own error shape is the registry's: api.Error's JSON.
	var e map[string]any
	b, _ := json.Marshal(api.E(api.CodeNotFound, "spec.agent", "x"))
	json.Unmarshal(b, &e)
	for k := range e {
		if !strings.Contains(string(parsed.Components.Schemas["Error"]), `"`+k+`"`) {
			t.Errorf("the Error schema lacks api.Error's key %q", k)
		}
	}
}

// TestOpenAPIServed: GET /v2/openapi.json answers the document.
func TestOpenAPIServed(t *testing.T) {
	ts, _ := newTestServer(t)
	req, _ := http.NewRequest("GET", ts.URL+"/v2/openapi.json", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != 200 {
		t.Fatalf("HTTP %d: %v", resp.StatusCode, err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Paths["/v2/agentruns/{name}/files/{path}"] == nil {
		t.Errorf("served document: openapi %q, %d paths", doc.OpenAPI, len(doc.Paths))
	}
}
