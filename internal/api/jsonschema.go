package api

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaURL names a grader's schema inside its own compiler; nothing is ever fetched from it.
const schemaURL = "mem://agentrun/grader-schema.json"

// compiled schemas by the sha256 of their text: an environment version is immutable, so its schema
// is compiled once when it is first validated (at load) and reused by every grading.
var (
	schemaMu    sync.Mutex
	schemaCache = map[[32]byte]*jsonschema.Schema{}
)

// maxCachedSchemas bounds the cache; past it a schema is compiled on each use (still correct).
const maxCachedSchemas = 1024

// noLoader refuses every $ref that is not inside the schema itself: a grader never reads the
// network or this machine's files (the standard metaschemas are built into the library).
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("$ref %q: a grader's schema may refer only to itself (no remote or file references)", url)
}

// CompiledSchema is the grader's JSON Schema compiled (draft 2020-12 unless $schema names
// another), or nil when it has none. The error says what is wrong with it.
func (g GraderSpec) CompiledSchema() (*jsonschema.Schema, error) {
	raw := bytes.TrimSpace(g.Schema)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	key := sha256.Sum256(raw)
	schemaMu.Lock()
	s, ok := schemaCache[key]
	schemaMu.Unlock()
	if ok {
		return s, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, isObj := doc.(map[string]any); !isObj {
		if _, isBool := doc.(bool); !isBool {
			return nil, fmt.Errorf("a JSON Schema is an object (or true/false)")
		}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	// A grader author who writes "format" means it to be checked, not noted.
	c.AssertFormat()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	s, err = c.Compile(schemaURL)
	if err != nil {
		return nil, err
	}
	schemaMu.Lock()
	if len(schemaCache) < maxCachedSchemas {
		schemaCache[key] = s
	}
	schemaMu.Unlock()
	return s, nil
}

// validateGraderSchema refuses a schema that does not compile, naming spec.grader.schema.
func validateGraderSchema(g GraderSpec) error {
	if len(g.Schema) > 0 && g.Kind != "json" {
		return Invalid("spec.grader.schema", "only a json grader takes a schema (this grader is %s)", g.Kind)
	}
	if _, err := g.CompiledSchema(); err != nil {
		return Invalid("spec.grader.schema", "grader schema: %v", err)
	}
	return nil
}
