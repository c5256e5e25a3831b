package e2etest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// OpenAPI is the server's /v2/openapi.json, compiled: each response it receives is held against
// the schema the document gives for that route, status and media type.
type OpenAPI struct {
	c      *jsonschema.Compiler
	routes []docRoute
	mu     sync.Mutex
	cache  map[string]*jsonschema.Schema
	// Seen counts the (route, status) pairs checked, for the test's report.
	Seen map[string]int
}

type docRoute struct {
	method, template string
	re               *regexp.Regexp
	responses        map[string]map[string]json.RawMessage // status -> media type -> its object
}

const openAPIURL = "http://agentrun.test/openapi.json"

// FetchOpenAPI fetches GET /v2/openapi.json with c and compiles it.
func FetchOpenAPI(c *http.Client, base, token string) (*OpenAPI, error) {
	req, _ := http.NewRequest("GET", base+"/v2/openapi.json", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET /v2/openapi.json: %w", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET /v2/openapi.json: HTTP %d %s", resp.StatusCode, raw)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("openapi.json is not JSON: %w", err)
	}
	d := &OpenAPI{c: jsonschema.NewCompiler(), cache: map[string]*jsonschema.Schema{}, Seen: map[string]int{}}
	d.c.DefaultDraft(jsonschema.Draft2020)
	d.c.AssertFormat()
	if err := d.c.AddResource(openAPIURL, inst); err != nil {
		return nil, err
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]json.RawMessage `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if doc.OpenAPI != "3.1.0" {
		return nil, fmt.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	for path, item := range doc.Paths {
		for method, op := range item {
			segs := strings.Split(path, "/")
			for i, seg := range segs {
				switch {
				case !strings.HasPrefix(seg, "{"):
					segs[i] = regexp.QuoteMeta(seg)
				case i == len(segs)-1 && (strings.HasSuffix(path, "/files/{path}") || strings.HasPrefix(path, "/v2/environments/")):
					// A {path...} or {ref...} wildcard takes the rest, slashes and all.
					segs[i] = ".*"
				default:
					segs[i] = "[^/]+"
				}
			}
			expr := "^" + strings.Join(segs, "/") + "$"
			r := docRoute{method: strings.ToUpper(method), template: path, re: regexp.MustCompile(expr), responses: map[string]map[string]json.RawMessage{}}
			for st, resp := range op.Responses {
				r.responses[st] = resp.Content
			}
			d.routes = append(d.routes, r)
		}
	}
	return d, nil
}

func escPointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func (d *OpenAPI) schema(ptr string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.cache[ptr]; ok {
		return s, nil
	}
	s, err := d.c.Compile(openAPIURL + ptr)
	if err != nil {
		return nil, err
	}
	d.cache[ptr] = s
	return s, nil
}

// route finds the documented route a request took; a literal segment beats a parameter
// (/v2/agentruns/{name}/cancel over nothing else, /v2/openapi.json over nothing).
func (d *OpenAPI) route(method, path string) (docRoute, bool) {
	var best docRoute
	found := false
	for _, r := range d.routes {
		if r.method != method || !r.re.MatchString(path) {
			continue
		}
		if !found || strings.Count(r.template, "{") < strings.Count(best.template, "{") {
			best, found = r, true
		}
	}
	return best, found
}

// Check holds one response against the document: its route is documented, with its status and
// media type, and a JSON body validates against that response's schema.
func (d *OpenAPI) Check(method, path string, status int, contentType string, body []byte) error {
	path, _, _ = strings.Cut(path, "?")
	r, ok := d.route(method, path)
	if !ok {
		return fmt.Errorf("%s %s: no route in the OpenAPI document", method, path)
	}
	st := strconv.Itoa(status)
	content, ok := r.responses[st]
	if !ok {
		return fmt.Errorf("%s %s (%s) answered %d, which the document does not list: %.300s", method, path, r.template, status, body)
	}
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(mt)
	if len(content) == 0 {
		if len(bytes.TrimSpace(body)) > 0 {
			return fmt.Errorf("%s %s %d: a body the document says is not there: %.200s", method, path, status, body)
		}
		return nil
	}
	if _, ok := content[mt]; !ok {
		return fmt.Errorf("%s %s %d: media type %q, the document lists %v", method, path, status, mt, keys(content))
	}
	d.mu.Lock()
	d.Seen[method+" "+r.template+" "+st]++
	d.mu.Unlock()
	if mt != "application/json" {
		return nil
	}
	s, err := d.schema("#/paths/" + escPointer(r.template) + "/" + strings.ToLower(method) + "/responses/" + st + "/content/application~1json/schema")
	if err != nil {
		return fmt.Errorf("%s %s %d: compile its schema: %v", method, r.template, status, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s %d: body is not JSON: %v: %.200s", method, path, status, err, body)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("%s %s %d: the body does not match the document (%s): %v\nbody: %.2000s", method, path, status, r.template, err, body)
	}
	return nil
}

// validateData holds one SSE event's data against a component schema.
func (d *OpenAPI) ValidateComponent(name string, data []byte) error {
	s, err := d.schema("#/components/schemas/" + name)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not JSON: %v: %s", err, data)
	}
	return s.Validate(inst)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// checkedCall makes a request and holds its answer against the document, failing the test when
// it does not match; it returns the status and body.
func (d *OpenAPI) Call(t *testing.T, e *Env, method, path, body string, hdr map[string]string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, e.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+e.Token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if err := d.Check(method, path, resp.StatusCode, resp.Header.Get("Content-Type"), data); err != nil {
		t.Error(err)
	}
	return resp.StatusCode, data
}
