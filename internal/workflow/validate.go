package workflow

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Options tune validation.
type Options struct {
	// Runnable also refuses node kinds (and call transports) this engine does not run yet.
	Runnable bool
	// Resolve returns the document a child node names by string ("workflow": "NAME"); nil: named
	// children are refused.
	Resolve func(name string) ([]byte, error)
	// DeferNamed, when Resolve is nil, leaves named children for a later check that can resolve
	// them (the server's, at save): they are neither refused nor resolved (Node.Child stays nil).
	DeferNamed bool
	// Tool, when set, says why the agent the document runs as cannot call the tool a call via
	// tool names ("" when it can): such a call is refused at validation (tool_unavailable)
	// instead of failing when the run reaches it.
	Tool func(name string) string
}

// kindSpec is a node kind's exact field set and its required fields.
type kindSpec struct {
	fields   []string
	required []string
}

var generative = []string{"label", "state", "instructions", "sopSection", "out", "as", "requires", "tools", "effort", "thinking", "verify", "tier"}

// legacy fields the published engine tolerates and ignores; here they are refused, since a field
// that does nothing is a surprise.
var legacy = map[string]map[string]bool{"agent": {"budget": true}, "decide": {"samples": true, "voteField": true}}

var predicates = map[string]kindSpec{
	"field_equals": {[]string{"path", "value"}, []string{"path", "value"}},
	"field_true":   {[]string{"path"}, []string{"path"}},
	"in":           {[]string{"path", "values"}, []string{"path", "values"}},
	"count_gte":    {[]string{"path", "n"}, []string{"path", "n"}},
	"gte":          {[]string{"path", "n"}, []string{"path", "n"}},
	"lt":           {[]string{"path", "n"}, []string{"path", "n"}},
	"empty":        {[]string{"path"}, []string{"path"}},
	"no_new_items": {[]string{"key"}, []string{"key"}},
	"ask":          {[]string{"instructions", "state", "criteria", "gte"}, []string{"instructions"}},
}

var retryOn = map[string]bool{"timeout": true, "http_5xx": true, "http_429": true, "connection": true, "exit": true,
	"effect_timeout": true, "effect_exit": true, "effect_transport": true, "effect_not_granted": true, "effect_produces_missing": true,
	"effect_path_escape": true, "effect_code_unsafe": true, "output_invalid": true, "state_invalid": true, "effect_unknown_transport": true}

// shared is what every document of one validation (the root and its children) shares.
type shared struct {
	errs  []Error
	lines *lineIndex
	opt   Options
	stack []string // named children being validated, for cycles
	// maps and conc are the maps around the node being validated (into named children too) and
	// the product of their maxConcurrency: the items that may run at once there.
	maps int
	conc int
}

func (s *shared) add(off int, ptr, code, format string, a ...any) {
	l, c := s.lines.pos(off)
	s.errs = append(s.errs, Error{Code: code, Pointer: ptr, Line: l, Column: c, Message: fmt.Sprintf(format, a...)})
}

// doc checks one document (the root, or an inline child).
type doc struct {
	sh      *shared
	schemas map[string]*value
	comp    *schemaSet
	labels  map[string]string
	child   bool
	terms   int
}

// scope is what state holds at a point: the keys written so far, or open when a node wrote keys
// nobody can know before it runs (a code node whose result is computed).
type scope struct {
	keys map[string]bool
	open bool
}

func (s *scope) clone() *scope {
	n := &scope{keys: make(map[string]bool, len(s.keys)), open: s.open}
	for k := range s.keys {
		n.keys[k] = true
	}
	return n
}

func (s *scope) add(k string) { s.keys[k] = true }

// where says what encloses a node.
type where struct {
	inside   string // "" (root chain), map, loop, parallel, route, child
	last     bool   // the node is the last step of the root chain
	siblings map[string]bool
	item     bool
}

// Validate checks a document and returns it parsed, or every error found.
func Validate(raw []byte, opt Options) (*Workflow, Invalid) {
	sh := &shared{lines: newLineIndex(raw), opt: opt}
	root, err := parse(raw, &sh.errs, sh.lines)
	if err != nil {
		return nil, append(sh.errs, *err.(*Error))
	}
	d := &doc{sh: sh, labels: map[string]string{}}
	d.document(root, "", false, nil)
	if len(sh.errs) > 0 {
		sortErrs(sh.errs)
		return nil, sh.errs
	}
	w, err := build(raw, opt)
	if err != nil {
		return nil, Invalid{{Code: CodeInvalidValue, Message: err.Error(), Line: 1, Column: 1}}
	}
	return w, nil
}

func sortErrs(errs []Error) {
	sort.SliceStable(errs, func(i, j int) bool {
		if errs[i].Line != errs[j].Line {
			return errs[i].Line < errs[j].Line
		}
		return errs[i].Column < errs[j].Column
	})
}

var docFields = []string{"v", "name", "schemas", "input", "output", "root", "metadata"}

// document checks {v, name, schemas, input, output, root}; initial is a child's initial state
// keys (its input object), nil for the root document.
func (d *doc) document(v *value, ptr string, child bool, initial map[string]bool) {
	d.child = child
	if v.kind != 'o' {
		d.sh.add(v.off, ptr, CodeWrongType, "a workflow is a JSON object {\"v\": 2, \"name\", \"schemas\", \"output\", \"root\"}, not %s", v.typeName())
		return
	}
	d.fields(v, ptr, "workflow", docFields, []string{"v", "name", "schemas", "output", "root"})
	if ver := v.get("v"); ver != nil && !(ver.kind == 'n' && ver.num.String() == "2") {
		d.sh.add(ver.off, ptr+"/v", CodeVersion, "this server reads workflow documents of version 2; set \"v\": 2")
	}
	d.nonEmpty(v, ptr, "name")
	d.object(v, ptr, "metadata")
	d.schemas = map[string]*value{}
	if s := v.get("schemas"); s != nil {
		if s.kind != 'o' {
			d.sh.add(s.off, ptr+"/schemas", CodeWrongType, "schemas maps schema ids to JSON Schemas; it is %s", s.typeName())
		} else {
			for _, m := range s.mem {
				d.schemas[m.key] = m.val
			}
			d.comp = compileSchemas(d, s, ptr+"/schemas")
		}
	}
	sc := &scope{keys: map[string]bool{}}
	in := v.get("input")
	if in != nil {
		if in.kind != 'o' {
			d.sh.add(in.off, ptr+"/input", CodeWrongType, "input is {\"schemaId\": ID}; it is %s", in.typeName())
		} else {
			d.fields(in, ptr+"/input", "input", []string{"schemaId"}, []string{"schemaId"})
			if id := d.schemaRef(in, ptr+"/input", "schemaId"); id != "" && initial == nil {
				props, ok := d.topProperties(id)
				if ok {
					for _, p := range props {
						sc.add(p)
					}
				} else {
					sc.open = true
				}
			}
		}
	} else if child {
		d.sh.add(v.off, ptr, CodeChildNoInput, "a child workflow declares its input contract: add \"input\": {\"schemaId\": ID}")
	} else {
		// No input contract: the input's keys are not known before it arrives.
		sc.open = true
	}
	if initial != nil {
		sc = &scope{keys: initial}
	}
	root := v.get("root")
	if root != nil {
		d.node(root, ptr+"/root", sc, where{last: true}, true)
	}
	out := v.get("output")
	if out != nil {
		if out.kind != 'o' {
			d.sh.add(out.off, ptr+"/output", CodeWrongType, "output is {\"schemaId\": ID, \"path\"?: PATH}; it is %s", out.typeName())
			return
		}
		d.fields(out, ptr+"/output", "output", []string{"schemaId", "path"}, []string{"schemaId"})
		id := d.schemaRef(out, ptr+"/output", "schemaId")
		if child && id != "" {
			if raw := d.schemas[id]; raw != nil && acceptsNothing(raw) {
				d.sh.add(raw.off, ptr+"/output/schemaId", CodeChildAcceptsNone, "the child's output schema %q accepts no value, so the child can never finish; give it a schema its output can meet", id)
			}
		}
		if p := out.get("path"); p != nil {
			if p.kind != 's' || p.str == "" {
				d.sh.add(p.off, ptr+"/output/path", CodeWrongType, "output.path is a state path such as \"result\"")
			} else {
				d.read(sc, p.str, p.off, ptr+"/output/path", where{})
			}
		}
	}
}

// fields reports unknown fields (naming them) and missing required ones.
func (d *doc) fields(v *value, ptr, what string, allowed, required []string) {
	ok := map[string]bool{}
	for _, f := range allowed {
		ok[f] = true
	}
	for _, m := range v.mem {
		if !ok[m.key] {
			if legacy[what][m.key] {
				d.sh.add(m.keyOff, ptr+"/"+escapePtr(m.key), CodeLegacyField, "%q is a legacy %s field the published engine ignores; this server refuses it rather than ignore it: remove it", m.key, what)
				continue
			}
			d.sh.add(m.keyOff, ptr+"/"+escapePtr(m.key), CodeUnknownField, "%s has no field %q; its fields are %s", what, m.key, strings.Join(allowed, ", "))
		}
	}
	for _, r := range required {
		if v.get(r) == nil {
			d.sh.add(v.off, ptr+"/"+r, CodeMissingField, "%s needs %q", what, r)
		}
	}
}

func (d *doc) str(v *value, ptr, name string) (string, *value) {
	f := v.get(name)
	if f == nil {
		return "", nil
	}
	if f.kind != 's' {
		d.sh.add(f.off, ptr+"/"+name, CodeWrongType, "%s is a string, not %s", name, f.typeName())
		return "", nil
	}
	return f.str, f
}

func (d *doc) nonEmpty(v *value, ptr, name string) (string, *value) {
	s, f := d.str(v, ptr, name)
	if f != nil && strings.TrimSpace(s) == "" {
		d.sh.add(f.off, ptr+"/"+name, CodeInvalidValue, "%s must not be empty", name)
		return "", nil
	}
	return s, f
}

func (d *doc) object(v *value, ptr, name string) *value {
	f := v.get(name)
	if f == nil {
		return nil
	}
	if f.kind != 'o' {
		d.sh.add(f.off, ptr+"/"+name, CodeWrongType, "%s is an object, not %s", name, f.typeName())
		return nil
	}
	return f
}

func (d *doc) strList(v *value, ptr, name string) []*value {
	f := v.get(name)
	if f == nil {
		return nil
	}
	if f.kind != 'a' {
		d.sh.add(f.off, ptr+"/"+name, CodeWrongType, "%s is a list of strings, not %s", name, f.typeName())
		return nil
	}
	var out []*value
	for i, e := range f.elems {
		if e.kind != 's' {
			d.sh.add(e.off, ptr+"/"+name+"/"+strconv.Itoa(i), CodeWrongType, "%s holds strings; this is %s", name, e.typeName())
			continue
		}
		out = append(out, e)
	}
	return out
}

// number returns a field's value when it is a finite number; ok=false when absent or wrong.
func (d *doc) number(v *value, ptr, name string) (float64, *value, bool) {
	f := v.get(name)
	if f == nil {
		return 0, nil, false
	}
	if f.kind != 'n' {
		d.sh.add(f.off, ptr+"/"+name, CodeWrongType, "%s is a number, not %s", name, f.typeName())
		return 0, f, false
	}
	x, err := f.num.Float64()
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		d.sh.add(f.off, ptr+"/"+name, CodeOutOfBounds, "%s must be a finite number", name)
		return 0, f, false
	}
	return x, f, true
}

func (d *doc) integer(v *value, ptr, name string, min int64) {
	x, f, ok := d.number(v, ptr, name)
	if !ok {
		return
	}
	if x != math.Trunc(x) {
		d.sh.add(f.off, ptr+"/"+name, CodeWrongType, "%s is a whole number, not %s", name, f.num)
		return
	}
	if int64(x) < min {
		d.sh.add(f.off, ptr+"/"+name, CodeOutOfBounds, "%s must be at least %d (it is %s)", name, min, f.num)
	}
}

// enterMap checks a map's bounds against the maps around it (MaxMapConcurrency, MaxMapNesting,
// MaxTotalConcurrency) and counts it for the nodes inside; the function it returns uncounts it.
// Each bound is reported at the map that first goes over it, not again at every map inside.
func (d *doc) enterMap(v *value, ptr string) func() {
	conc := defaultMapWorkers
	if x, f, ok := d.number(v, ptr, "maxConcurrency"); ok && x == math.Trunc(x) && x >= 1 {
		if x > MaxMapConcurrency {
			d.sh.add(f.off, ptr+"/maxConcurrency", CodeOutOfBounds, "maxConcurrency is at most %d (it is %s)", MaxMapConcurrency, f.num)
			x = MaxMapConcurrency
		}
		conc = int(x)
	}
	outer, outerConc := d.sh.maps, max(d.sh.conc, 1)
	d.sh.maps, d.sh.conc = outer+1, outerConc*conc
	if d.sh.maps == MaxMapNesting+1 {
		d.sh.add(v.off, ptr, CodeTooDeep, "this map is inside %d others: maps nest at most %d deep (the items of nested maps multiply)", outer, MaxMapNesting)
	}
	if d.sh.conc > MaxTotalConcurrency && outerConc <= MaxTotalConcurrency {
		d.sh.add(v.off, ptr+"/maxConcurrency", CodeTooConcurrent, "with the maps around it this map may run %d items at once (%d × %d, maxConcurrency or its default %d): at most %d; lower a maxConcurrency",
			d.sh.conc, outerConc, conc, defaultMapWorkers, MaxTotalConcurrency)
	}
	return func() { d.sh.maps, d.sh.conc = outer, outerConc }
}

func (d *doc) enum(v *value, ptr, name string, allowed ...string) {
	s, f := d.str(v, ptr, name)
	if f == nil {
		return
	}
	for _, a := range allowed {
		if s == a {
			return
		}
	}
	d.sh.add(f.off, ptr+"/"+name, CodeInvalidValue, "%s is one of %s, not %q", name, strings.Join(allowed, ", "), s)
}

// schemaRef checks a field naming a schema id of this document.
func (d *doc) schemaRef(v *value, ptr, name string) string {
	s, f := d.nonEmpty(v, ptr, name)
	if f == nil {
		return ""
	}
	if _, ok := d.schemas[s]; !ok {
		d.sh.add(f.off, ptr+"/"+name, CodeSchemaUnknown, "no schema %q in this document's schemas (it has %s)", s, idList(d.schemas))
		return ""
	}
	return s
}

func idList(m map[string]*value) string {
	if len(m) == 0 {
		return "none"
	}
	ids := make([]string, 0, len(m))
	for k := range m {
		ids = append(ids, strconv.Quote(k))
	}
	sort.Strings(ids)
	return strings.Join(ids, ", ")
}

// topProperties are the property names of an object schema (through one #/definitions ref).
func (d *doc) topProperties(id string) ([]string, bool) {
	s := d.schemas[id]
	for i := 0; s != nil && i < 8; i++ {
		if r := s.get("$ref"); r != nil && r.kind == 's' && strings.HasPrefix(r.str, "#/definitions/") {
			s = d.schemas[strings.TrimPrefix(r.str, "#/definitions/")]
			continue
		}
		break
	}
	if s == nil || s.kind != 'o' {
		return nil, false
	}
	props := s.get("properties")
	if props == nil || props.kind != 'o' {
		return nil, false
	}
	var out []string
	for _, m := range props.mem {
		out = append(out, m.key)
	}
	// A schema that allows other properties lets the input carry keys it does not list.
	ap := s.get("additionalProperties")
	open := ap == nil || !(ap.kind == 'b' && !ap.b)
	return out, !open || len(out) > 0
}

var placeholder = regexp.MustCompile(`\{([A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z0-9_$-]+)*)\}`)

// reads checks every {path} placeholder in the strings of v.
func (d *doc) reads(sc *scope, v *value, ptr string, w where) {
	if v == nil {
		return
	}
	switch v.kind {
	case 's':
		for _, m := range placeholder.FindAllStringSubmatch(v.str, -1) {
			d.read(sc, m[1], v.off, ptr, w)
		}
	case 'o':
		for _, m := range v.mem {
			d.reads(sc, m.val, ptr+"/"+escapePtr(m.key), w)
		}
	case 'a':
		for i, e := range v.elems {
			d.reads(sc, e, ptr+"/"+strconv.Itoa(i), w)
		}
	}
}

func pathRoot(p string) string {
	if i := strings.IndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return p
}

// read reports a state path whose first key nothing upstream writes.
func (d *doc) read(sc *scope, path string, off int, ptr string, w where) {
	root := pathRoot(path)
	if root == "" {
		d.sh.add(off, ptr, CodeInvalidValue, "%q is not a state path; write one such as \"result.name\"", path)
		return
	}
	if sc.keys[root] || root == "$host" {
		return
	}
	if w.item && (root == "item" || root == "item_index") {
		return
	}
	if w.siblings[root] {
		d.sh.add(off, ptr, CodeParallelSibling, "%q is written by another branch of this parallel node; branches start from the state before it and never see each other's writes", root)
		return
	}
	if sc.open {
		return
	}
	known := make([]string, 0, len(sc.keys))
	for k := range sc.keys {
		known = append(known, k)
	}
	sort.Strings(known)
	d.sh.add(off, ptr, CodePathUnwritten, "nothing upstream writes %q (read as %q); state holds %s here: write it in an earlier node or read another key", root, path, orNone(known))
}

func orNone(k []string) string {
	if len(k) == 0 {
		return "no keys"
	}
	return strings.Join(k, ", ")
}

// write records a node's write of key k.
func (d *doc) write(sc *scope, k string, off int, ptr string) {
	if strings.Contains(k, "$") {
		d.sh.add(off, ptr, CodeReservedKey, "%q: keys with \"$\" are the engine's ($host, <as>$answers, <as>$verify); name it without \"$\"", k)
		return
	}
	sc.add(k)
}

// node checks one node and adds what it writes to sc. top says it is the root node itself.
func (d *doc) node(v *value, ptr string, sc *scope, w where, top bool) {
	if v.kind != 'o' {
		d.sh.add(v.off, ptr, CodeWrongType, "a node is an object {\"node\": KIND, ...}, not %s", v.typeName())
		return
	}
	kv := v.get("node")
	if kv == nil {
		d.sh.add(v.off, ptr+"/node", CodeMissingField, "a node needs \"node\", its kind (%s)", kindList())
		return
	}
	if kv.kind != 's' {
		d.sh.add(kv.off, ptr+"/node", CodeWrongType, "node is a kind name, not %s", kv.typeName())
		return
	}
	kind := kv.str
	spec, ok := kinds[kind]
	if !ok {
		d.sh.add(kv.off, ptr+"/node", CodeUnknownKind, "no node kind %q; the kinds are %s", kind, kindList())
		return
	}
	if d.sh.opt.Runnable && !RunnableKinds[kind] {
		d.sh.add(kv.off, ptr+"/node", CodeNotRunnable, "this server validates %q nodes but does not run them yet", kind)
	}
	d.fields(v, ptr, kind, append([]string{"node", "metadata"}, spec.fields...), spec.required)
	d.object(v, ptr, "metadata")
	label, lv := d.nonEmpty(v, ptr, "label")
	if lv != nil {
		if prev, dup := d.labels[label]; dup {
			d.sh.add(lv.off, ptr+"/label", CodeDuplicateLabel, "label %q is already used at %s; labels name nodes and must be unique", label, prev)
		} else {
			d.labels[label] = ptr
		}
	}
	as, av := d.nonEmpty(v, ptr, "as")
	// requires is checked before every node kind that has it (F1), so its paths must exist here.
	for i, r := range d.strList(v, ptr, "requires") {
		d.read(sc, r.str, r.off, ptr+"/requires/"+strconv.Itoa(i), w)
	}
	if st := d.object(v, ptr, "state"); st != nil {
		d.reads(sc, st, ptr+"/state", w)
	}
	d.generativeFields(v, ptr, kind)
	if vf := v.get("verify"); vf != nil && vf.kind == 'o' {
		// verify.state reads the state before the node, the submission, and the node's own key.
		if st := vf.get("state"); st != nil && st.kind == 'o' {
			vs := sc.clone()
			vs.add("submission")
			vs.add(orElse(as, label))
			d.reads(vs, st, ptr+"/verify/state", w)
		}
	}
	if kind == "report" || kind == "artifact" {
		d.terminal(v, ptr, kind, w)
	}
	if k := kinds[kind]; k.check != nil {
		k.check(&nodeCheck{d: d, v: v, ptr: ptr, sc: sc, w: w, kind: kind, av: av, lv: lv, label: label, as: as})
	}
}

func kindList() string {
	ks := make([]string, 0, len(kinds))
	for k := range kinds {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// generativeFields checks the fields the model-facing kinds share.
func (d *doc) generativeFields(v *value, ptr, kind string) {
	d.enum(v, ptr, "effort", "minimal", "low", "medium", "high")
	d.enum(v, ptr, "thinking", "low", "medium", "high")
	d.enum(v, ptr, "tier", "fast", "default", "strong")
	d.enum(v, ptr, "context", "fresh", "fork")
	d.strList(v, ptr, "tools")
	if _, ok := kinds[kind]; ok && kind != "route" && kind != "pick" {
		d.nonEmpty(v, ptr, "instructions")
	}
	if sop := v.get("sopSection"); sop != nil {
		if sop.kind != 's' {
			d.strList(v, ptr, "sopSection")
		}
		if d.sh.opt.Runnable {
			d.sh.add(sop.off, ptr+"/sopSection", CodeNotRunnable, "this server has no SOP for sopSection to name a section of; remove it and put what the node needs in its instructions")
		}
	}
	if x, f, ok := d.number(v, ptr, "budget_usd"); ok && x <= 0 {
		d.sh.add(f.off, ptr+"/budget_usd", CodeOutOfBounds, "budget_usd is a number of dollars above 0")
	}
	if kind == "agent" || kind == "decide" || kind == "extract" {
		d.schemaRef(v, ptr, "out")
	}
	if vf := d.object(v, ptr, "verify"); vf != nil {
		d.fields(vf, ptr+"/verify", "verify", []string{"out", "state", "maxDrives", "override"}, []string{"out"})
		if id := d.schemaRef(vf, ptr+"/verify", "out"); id != "" {
			d.questionSchema(id, ptr+"/verify/out", vf.get("out").off)
			if !d.hasBoolean(id) {
				d.sh.add(vf.get("out").off, ptr+"/verify/out", CodeQuestionSchema, "verify.out %q has no yes/no question: a reviewer decides by yes/no (a boolean named after a submission field doubts it; any other boolean is a requirement)", id)
			}
		}
		d.object(vf, ptr+"/verify", "state")
		d.integer(vf, ptr+"/verify", "maxDrives", 1)
		if o := d.object(vf, ptr+"/verify", "override"); o != nil {
			d.fields(o, ptr+"/verify/override", "override", []string{"below"}, nil)
			if x, f, ok := d.number(o, ptr+"/verify/override", "below"); ok && (x <= 0 || x >= 1) {
				d.sh.add(f.off, ptr+"/verify/override/below", CodeOutOfBounds, "override.below is a number in (0, 1)")
			}
		}
	}
}

// terminal enforces one report or artifact, the last step of the root chain.
func (d *doc) terminal(v *value, ptr, kind string, w where) {
	kv := v.get("node")
	switch {
	case d.child:
		d.sh.add(kv.off, ptr+"/node", CodeTerminalInside, "a child workflow has no %s: its parent writes the deliverable", kind)
	case w.inside != "":
		d.sh.add(kv.off, ptr+"/node", CodeTerminalInside, "a %s is the workflow's deliverable and cannot sit inside a %s; make it the last step of the root chain", kind, w.inside)
	case d.terms > 0:
		d.sh.add(kv.off, ptr+"/node", CodeTerminalTwice, "a workflow has at most one report or artifact; merge the two")
	case !w.last:
		d.sh.add(kv.off, ptr+"/node", CodeTerminalNotLast, "a %s is the last step of the root chain; move it to the end", kind)
	}
	d.terms++
}

// predicate checks one predicate; mechanical restricts to the 8 poll takes.
func (d *doc) predicate(v *value, ptr string, sc *scope, w where, mechanical bool) {
	if v.kind != 'o' {
		d.sh.add(v.off, ptr, CodeWrongType, "a predicate is an object {\"predicate\": NAME, ...}, not %s", v.typeName())
		return
	}
	pv := v.get("predicate")
	if pv == nil || pv.kind != 's' {
		d.sh.add(v.off, ptr+"/predicate", CodeMissingField, "a predicate needs \"predicate\", one of field_equals, field_true, in, count_gte, gte, lt, empty, no_new_items, ask")
		return
	}
	spec, ok := predicates[pv.str]
	if !ok || (mechanical && pv.str == "ask") {
		what := "field_equals, field_true, in, count_gte, gte, lt, empty, no_new_items, ask"
		if mechanical {
			what = "field_equals, field_true, in, count_gte, gte, lt, empty, no_new_items (a poll asks no model)"
		}
		d.sh.add(pv.off, ptr+"/predicate", CodeUnknownPredicate, "no predicate %q here; use one of %s", pv.str, what)
		return
	}
	d.fields(v, ptr, pv.str+" predicate", append([]string{"predicate"}, spec.fields...), spec.required)
	if p, f := d.nonEmpty(v, ptr, "path"); f != nil && !mechanical {
		d.read(sc, p, f.off, ptr+"/path", w)
	}
	if k, f := d.nonEmpty(v, ptr, "key"); f != nil && !mechanical {
		d.read(sc, k, f.off, ptr+"/key", w)
	}
	switch pv.str {
	case "field_equals":
		if val := v.get("value"); val != nil && val.kind != 's' && val.kind != 'n' && val.kind != 'b' {
			d.sh.add(val.off, ptr+"/value", CodeWrongType, "value is a string, number or boolean, not %s", val.typeName())
		}
	case "in":
		if vals := v.get("values"); vals != nil {
			if vals.kind != 'a' || len(vals.elems) == 0 {
				d.sh.add(vals.off, ptr+"/values", CodeWrongType, "values is a non-empty list of strings, numbers or booleans")
			} else {
				for i, e := range vals.elems {
					if e.kind != 's' && e.kind != 'n' && e.kind != 'b' {
						d.sh.add(e.off, ptr+"/values/"+strconv.Itoa(i), CodeWrongType, "values holds strings, numbers or booleans, not %s", e.typeName())
					}
				}
			}
		}
	case "count_gte", "gte", "lt":
		d.number(v, ptr, "n")
	case "ask":
		d.nonEmpty(v, ptr, "instructions")
		if st := d.object(v, ptr, "state"); st != nil {
			d.reads(sc, st, ptr+"/state", w)
		}
		if c := d.object(v, ptr, "criteria"); c != nil {
			d.fields(c, ptr+"/criteria", "criteria", []string{"true", "false"}, nil)
		}
		if x, f, ok := d.number(v, ptr, "gte"); ok && (x <= 0.5 || x > 1) {
			d.sh.add(f.off, ptr+"/gte", CodeOutOfBounds, "an ask predicate's gte is in (0.5, 1] (it is %s)", f.num)
		}
	}
}

var envName = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

func (d *doc) call(v *value, ptr string, sc *scope, w where) {
	via, vv := d.str(v, ptr, "via")
	if x, f, ok := d.number(v, ptr, "deadline_s"); ok && x <= 0 {
		d.sh.add(f.off, ptr+"/deadline_s", CodeOutOfBounds, "deadline_s is a number of seconds above 0; an unbounded effect stalls the run")
	} else if ok && x > 0 {
		_ = x
	}
	deadline, _, _ := d.number(v, ptr, "deadline_s")
	only := map[string][]string{
		"tool":     {"tool", "args", "out"},
		"executor": {"code", "input", "out"},
		"shell":    {"command", "env", "produces"},
	}
	if vv != nil {
		allowed, ok := only[via]
		if !ok {
			d.sh.add(vv.off, ptr+"/via", CodeInvalidValue, "via is tool, executor or shell, not %q", via)
		} else {
			mine := map[string]bool{}
			for _, f := range allowed {
				mine[f] = true
			}
			for other, fs := range only {
				if other == via {
					continue
				}
				for _, f := range fs {
					if fv := v.get(f); fv != nil && !mine[f] {
						d.sh.add(fv.off, ptr+"/"+f, CodeFieldNotForVia, "%q belongs to a call via %s, not via %s; remove it", f, other, via)
					}
				}
			}
		}
	}
	switch via {
	case "tool":
		if v.get("tool") == nil {
			d.sh.add(v.off, ptr+"/tool", CodeMissingField, "a call via tool names its tool")
		}
		if name, f := d.nonEmpty(v, ptr, "tool"); f != nil && d.sh.opt.Tool != nil {
			if why := d.sh.opt.Tool(name); why != "" {
				d.sh.add(f.off, ptr+"/tool", CodeToolUnavailable, "%s", why)
			}
		}
		if a := d.object(v, ptr, "args"); a != nil {
			d.reads(sc, a, ptr+"/args", w)
		}
		if v.get("out") == nil {
			d.sh.add(v.off, ptr+"/out", CodeMissingField, "a call via tool names the schema of the tool's result in \"out\"")
		}
		d.schemaRef(v, ptr, "out")
	case "executor":
		for _, f := range []string{"code", "out"} {
			if v.get(f) == nil {
				d.sh.add(v.off, ptr+"/"+f, CodeMissingField, "a call via executor needs %q", f)
			}
		}
		if body, cv := d.nonEmpty(v, ptr, "code"); cv != nil {
			if err := CheckExecutorBody(body); err != nil {
				d.sh.add(cv.off, ptr+"/code", CodeCodeInvalid, "%v", err)
			}
		}
		if in := d.object(v, ptr, "input"); in != nil {
			d.reads(sc, in, ptr+"/input", w)
		}
		d.schemaRef(v, ptr, "out")
	case "shell":
		if v.get("command") == nil {
			d.sh.add(v.off, ptr+"/command", CodeMissingField, "a call via shell needs \"command\"")
		}
		d.nonEmpty(v, ptr, "command")
		if env := d.object(v, ptr, "env"); env != nil {
			for _, m := range env.mem {
				if !envName.MatchString(m.key) {
					d.sh.add(m.keyOff, ptr+"/env/"+escapePtr(m.key), CodeInvalidValue, "env names are UPPER_CASE (%q)", m.key)
				}
				if m.val.kind != 's' {
					d.sh.add(m.val.off, ptr+"/env/"+escapePtr(m.key), CodeWrongType, "env values are strings")
				}
			}
			d.reads(sc, env, ptr+"/env", w)
		}
		for i, p := range d.strList(v, ptr, "produces") {
			if strings.HasPrefix(p.str, "/") || strings.Contains("/"+p.str+"/", "/../") {
				d.sh.add(p.off, ptr+"/produces/"+strconv.Itoa(i), CodeInvalidValue, "produces names files relative to the run folder, inside it (%q)", p.str)
			}
			d.reads(sc, p, ptr+"/produces/"+strconv.Itoa(i), w)
			sc.add("$produced:" + p.str)
		}
	}
	d.enum(v, ptr, "where", "sandbox")
	if r := d.object(v, ptr, "retry"); r != nil {
		d.fields(r, ptr+"/retry", "retry", []string{"attempts", "backoff_s", "on"}, []string{"attempts"})
		d.integer(r, ptr+"/retry", "attempts", 1)
		if x, f, ok := d.number(r, ptr+"/retry", "backoff_s"); ok && x < 0 {
			d.sh.add(f.off, ptr+"/retry/backoff_s", CodeOutOfBounds, "backoff_s is at least 0")
		}
		for i, o := range d.strList(r, ptr+"/retry", "on") {
			if !retryOn[o.str] {
				d.sh.add(o.off, ptr+"/retry/on/"+strconv.Itoa(i), CodeInvalidValue, "retry.on names timeout, http_5xx, http_429, connection, exit or an effect failure code, not %q", o.str)
			}
		}
	}
	if p := d.object(v, ptr, "poll"); p != nil {
		d.fields(p, ptr+"/poll", "poll", []string{"until", "fail_when", "interval_s", "deadline_s"}, []string{"until", "interval_s", "deadline_s"})
		for _, f := range []string{"until", "fail_when"} {
			if pv := p.get(f); pv != nil {
				d.predicate(pv, ptr+"/poll/"+f, sc, w, true)
				d.resultPath(v, via, pv, ptr+"/poll/"+f)
			}
		}
		if x, f, ok := d.number(p, ptr+"/poll", "interval_s"); ok && x < 0.1 {
			d.sh.add(f.off, ptr+"/poll/interval_s", CodeOutOfBounds, "interval_s is at least 0.1 (a busy-loop guard)")
		}
		if x, f, ok := d.number(p, ptr+"/poll", "deadline_s"); ok && x < deadline {
			d.sh.add(f.off, ptr+"/poll/deadline_s", CodeOutOfBounds, "poll.deadline_s is at least the call's deadline_s (%g)", deadline)
		}
	}
}

func (d *doc) parallel(v *value, ptr string, sc *scope, w where) {
	br := v.get("branches")
	if br == nil {
		return
	}
	if br.kind != 'a' || len(br.elems) < 2 {
		d.sh.add(br.off, ptr+"/branches", CodeWrongType, "a parallel node's branches is a list of at least two nodes")
		return
	}
	// What each branch writes, to find conflicts and reads of a sibling's writes (F2: an
	// unaliased label and a code node's returned keys are writes too).
	writes := make([]*scope, len(br.elems))
	for i, b := range br.elems {
		writes[i] = writesOf(b)
	}
	owner := map[string]int{}
	var union []string
	for i, ws := range writes {
		bptr := ptr + "/branches/" + strconv.Itoa(i)
		if ws.open {
			d.sh.add(br.elems[i].off, bptr, CodeParallelOpenWrite, "this branch has a code node whose written keys cannot be known before it runs; give it \"as\" so branches stay disjoint")
		}
		keys := sortedKeys(ws.keys)
		for _, k := range keys {
			if j, dup := owner[k]; dup {
				d.sh.add(br.elems[i].off, bptr, CodeParallelConflict, "branches %d and %d both write %q; parallel branches write disjoint keys", j, i, k)
				continue
			}
			owner[k] = i
			union = append(union, k)
		}
	}
	for i, b := range br.elems {
		sib := map[string]bool{}
		for k, j := range owner {
			if j != i && !sc.keys[k] {
				sib[k] = true
			}
		}
		bs := sc.clone()
		d.node(b, ptr+"/branches/"+strconv.Itoa(i), bs, where{inside: "parallel", item: w.item, siblings: sib}, false)
	}
	for _, k := range union {
		sc.add(k)
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writesOf is the set of top-level keys a node may write (open: unknown keys).
func writesOf(v *value) *scope {
	s := &scope{keys: map[string]bool{}}
	var walk func(v *value)
	walk = func(v *value) {
		if v == nil || v.kind != 'o' {
			return
		}
		kind := ""
		if k := v.get("node"); k != nil && k.kind == 's' {
			kind = k.str
		}
		as := v.get("as")
		label := v.get("label")
		if as != nil && as.kind == 's' {
			s.add(as.str)
			if kind == "judge" || kind == "route" {
				s.add(as.str + "$answers")
			}
		}
		if k := kinds[kind]; k != nil && k.writes != nil {
			k.writes(s, v, as, label, walk)
		}
	}
	walk(v)
	return s
}

func (d *doc) route(v *value, ptr string, sc *scope, w where) {
	br := v.get("branches")
	names := map[string]bool{}
	if br != nil {
		if br.kind != 'o' || len(br.mem) < 2 || len(br.mem) > 240 {
			d.sh.add(br.off, ptr+"/branches", CodeOutOfBounds, "a route has 2 to 240 named branches {NAME: {\"criteria\"?, \"body\"}}")
		}
	}
	vp, vpv := d.nonEmpty(v, ptr, "valuePath")
	if vpv != nil {
		d.read(sc, vp, vpv.off, ptr+"/valuePath", w)
		for _, f := range []string{"instructions", "unsure"} {
			if fv := v.get(f); fv != nil {
				d.sh.add(fv.off, ptr+"/"+f, CodeInvalidValue, "a route on valuePath asks no model: remove %q", f)
			}
		}
	} else {
		if v.get("instructions") == nil {
			d.sh.add(v.off, ptr+"/instructions", CodeMissingField, "a route asks one question (\"instructions\"), or dispatches on a stored string (\"valuePath\")")
		}
		d.nonEmpty(v, ptr, "instructions")
		if st := v.get("state"); st == nil {
			d.sh.add(v.off, ptr+"/state", CodeMissingField, "a route that asks a model names what it sees in a non-empty \"state\" map")
		} else if st.kind == 'o' && len(st.mem) == 0 {
			d.sh.add(st.off, ptr+"/state", CodeInvalidValue, "a route's state is a non-empty map")
		}
		if ov := v.get("otherwise"); ov != nil {
			d.sh.add(ov.off, ptr+"/otherwise", CodeInvalidValue, "otherwise belongs to a route on valuePath; a model route uses unsure")
		}
	}
	var after *scope
	if br != nil && br.kind == 'o' {
		for _, m := range br.mem {
			bptr := ptr + "/branches/" + escapePtr(m.key)
			names[m.key] = true
			if m.val.kind != 'o' {
				d.sh.add(m.val.off, bptr, CodeWrongType, "a branch is {\"criteria\"?, \"body\"}")
				continue
			}
			d.fields(m.val, bptr, "branch", []string{"criteria", "body"}, []string{"body"})
			d.str(m.val, bptr, "criteria")
			bs := sc.clone()
			if b := m.val.get("body"); b != nil {
				d.node(b, bptr+"/body", bs, where{inside: "route", item: w.item, siblings: w.siblings}, false)
			}
			// After a route only what every branch writes is sure to be there.
			if after == nil {
				after = bs
			} else {
				for k := range after.keys {
					if !bs.keys[k] {
						delete(after.keys, k)
					}
				}
				after.open = after.open || bs.open
			}
		}
	}
	if u := d.object(v, ptr, "unsure"); u != nil {
		d.fields(u, ptr+"/unsure", "unsure", []string{"branch", "gte"}, []string{"branch", "gte"})
		if b, bv := d.nonEmpty(u, ptr+"/unsure", "branch"); bv != nil && !names[b] {
			d.sh.add(bv.off, ptr+"/unsure/branch", CodeBranchUnknown, "unsure.branch %q is not one of this route's branches", b)
		}
		if x, f, ok := d.number(u, ptr+"/unsure", "gte"); ok && (x <= 0 || x > 1) {
			d.sh.add(f.off, ptr+"/unsure/gte", CodeOutOfBounds, "unsure.gte is a number in (0, 1]")
		}
	}
	if o, ov := d.nonEmpty(v, ptr, "otherwise"); ov != nil && !names[o] {
		d.sh.add(ov.off, ptr+"/otherwise", CodeBranchUnknown, "otherwise %q is not one of this route's branches", o)
	}
	if after != nil {
		for k := range after.keys {
			sc.add(k)
		}
		sc.open = sc.open || after.open
	}
}

// childNode checks a workflow node: its input (interpolated in the parent, no reserved keys:
// F4), the child document itself, and the parent's out schema (F5).
func (d *doc) childNode(v *value, ptr string, sc *scope, w where) {
	initial := map[string]bool{}
	if in := d.object(v, ptr, "input"); in != nil {
		for _, m := range in.mem {
			if strings.HasPrefix(m.key, "$") {
				d.sh.add(m.keyOff, ptr+"/input/"+escapePtr(m.key), CodeReservedKey, "a child's input may not set %q: keys with \"$\" are the engine's", m.key)
				continue
			}
			initial[m.key] = true
		}
		d.reads(sc, in, ptr+"/input", w)
	}
	if id := d.schemaRef(v, ptr, "out"); id != "" && acceptsNothing(d.schemas[id]) {
		d.sh.add(v.get("out").off, ptr+"/out", CodeChildAcceptsNone, "schema %q accepts no value, so this child's output can never pass; give it a schema its output can meet", id)
	}
	cv := v.get("workflow")
	if cv == nil {
		return
	}
	cptr := ptr + "/workflow"
	switch cv.kind {
	case 'o':
		cd := &doc{sh: d.sh, labels: map[string]string{}}
		cd.document(cv, cptr, true, initial)
	case 's':
		name := cv.str
		for _, s := range d.sh.stack {
			if s == name {
				d.sh.add(cv.off, cptr, CodeChildCycle, "child workflow %q calls itself (%s → %s); a workflow may not contain itself", name, strings.Join(d.sh.stack, " → "), name)
				return
			}
		}
		if d.sh.opt.Resolve == nil && d.sh.opt.DeferNamed {
			return
		}
		if d.sh.opt.Resolve == nil {
			d.sh.add(cv.off, cptr, CodeChildUnresolved, "child workflow %q is named, not inline, and nothing here resolves names; inline the child document", name)
			return
		}
		raw, err := d.sh.opt.Resolve(name)
		if err != nil {
			d.sh.add(cv.off, cptr, CodeChildUnresolved, "child workflow %q: %v", name, err)
			return
		}
		// The named child is validated on its own; its errors are reported at this node.
		sub := &shared{lines: newLineIndex(raw), opt: d.sh.opt, stack: append(append([]string{}, d.sh.stack...), name), maps: d.sh.maps, conc: d.sh.conc}
		croot, perr := parse(raw, &sub.errs, sub.lines)
		if perr == nil {
			cd := &doc{sh: sub, labels: map[string]string{}}
			cd.document(croot, "", true, initial)
		} else {
			sub.errs = append(sub.errs, *perr.(*Error))
		}
		for _, e := range sub.errs {
			if e.Code == CodeChildCycle {
				d.sh.add(cv.off, cptr, CodeChildCycle, "%s", e.Message)
				continue
			}
			d.sh.add(cv.off, cptr, e.Code, "in child %q at %d:%d %s: %s", name, e.Line, e.Column, e.Pointer, e.Message)
		}
	default:
		d.sh.add(cv.off, cptr, CodeWrongType, "workflow is an inline child document (or the name of one), not %s", cv.typeName())
	}
}

// acceptsNothing reports a schema no value can meet: false, {"not": {}}, {"enum": []}, {"type": []}.
func acceptsNothing(s *value) bool {
	if s == nil {
		return false
	}
	if s.kind == 'b' {
		return !s.b
	}
	if s.kind != 'o' {
		return false
	}
	if n := s.get("not"); n != nil && ((n.kind == 'o' && len(n.mem) == 0) || (n.kind == 'b' && n.b)) {
		return true
	}
	if e := s.get("enum"); e != nil && e.kind == 'a' && len(e.elems) == 0 {
		return true
	}
	if t := s.get("type"); t != nil && t.kind == 'a' && len(t.elems) == 0 {
		return true
	}
	return false
}

// questionSchema checks a flat question schema: each property a boolean, a string enum (at most
// 240 options) or an integer score with 2 to 10 criteria levels.
func (d *doc) questionSchema(id, ptr string, off int) {
	s := d.schemas[id]
	if s == nil || s.kind != 'o' {
		d.sh.add(off, ptr, CodeQuestionSchema, "question schema %q is a flat object schema of questions", id)
		return
	}
	props := s.get("properties")
	if props == nil || props.kind != 'o' || len(props.mem) == 0 {
		d.sh.add(off, ptr, CodeQuestionSchema, "question schema %q has no questions: give it properties, each a boolean, a string enum or an integer score", id)
		return
	}
	for _, m := range props.mem {
		q := m.val
		t := q.get("type")
		bad := func(why string) {
			d.sh.add(off, ptr, CodeQuestionSchema, "question %q of schema %q: %s", m.key, id, why)
		}
		if q.get("description") == nil {
			bad("its description is the question; add one")
		}
		switch {
		case t != nil && t.kind == 's' && t.str == "boolean":
		case t != nil && t.kind == 's' && t.str == "string":
			e := q.get("enum")
			if e == nil || e.kind != 'a' || len(e.elems) == 0 || len(e.elems) > 240 {
				bad("a string question is an enum of 1 to 240 options")
			}
		case t != nil && t.kind == 's' && t.str == "integer":
			c := q.get("criteria")
			if c == nil || c.kind != 'a' || len(c.elems) < 2 || len(c.elems) > 10 {
				bad("an integer question is a score with criteria: 2 to 10 level descriptions")
			}
		default:
			bad("a question is a boolean, a string enum or an integer score")
		}
	}
}

// parseNumber is a JSON number as float64 (for the engine).
func parseNumber(n json.Number) float64 {
	f, _ := n.Float64()
	return f
}

func orElse(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// questionProps are a question schema's properties (name -> its schema), nil when it has none.
func (d *doc) questionProps(id string) []member {
	s := d.schemas[id]
	if s == nil || s.kind != 'o' {
		return nil
	}
	p := s.get("properties")
	if p == nil || p.kind != 'o' {
		return nil
	}
	return p.mem
}

func (d *doc) hasBoolean(id string) bool {
	props := d.questionProps(id)
	if props == nil {
		return true // questionSchema reported the schema itself
	}
	for _, m := range props {
		if t := m.val.get("type"); t != nil && t.kind == 's' && t.str == "boolean" {
			return true
		}
	}
	return false
}

// keepPath checks a sift's keep.path: a question of its schema (a yes/no or a score), or
// ID.confidence of any question; a choice is no keep axis.
func (d *doc) keepPath(id, p string, off int, ptr string) {
	props := d.questionProps(id)
	if props == nil {
		return
	}
	qid, tail, dotted := strings.Cut(p, ".")
	var q *value
	names := make([]string, 0, len(props))
	for _, m := range props {
		names = append(names, m.key)
		if m.key == qid {
			q = m.val
		}
	}
	switch {
	case q == nil || (dotted && tail != "confidence"):
		d.sh.add(off, ptr, CodeInvalidValue, "keep.path %q names no question of schema %q; name one of %s, or ID.confidence", p, id, strings.Join(names, ", "))
	case !dotted:
		if t := q.get("type"); t != nil && t.kind == 's' && t.str == "string" {
			d.sh.add(off, ptr, CodeInvalidValue, "keep.path %q is a choice, which has no order to keep by: keep on a yes/no or score question, or on %s.confidence", p, qid)
		}
	}
}

// resultPath checks that a poll predicate's path reads a key the call's own result has: a shell
// call's {code, stdout, stderr, truncated}, a tool call's {ok, content, data}, an executor's out
// schema's properties (when it lists them).
func (d *doc) resultPath(call *value, via string, pred *value, ptr string) {
	if pred.kind != 'o' {
		return
	}
	field := "path"
	pv := pred.get(field)
	if pv == nil {
		field, pv = "key", pred.get("key")
	}
	if pv == nil || pv.kind != 's' {
		return
	}
	var keys []string
	switch via {
	case "shell":
		keys = []string{"code", "stdout", "stderr", "truncated"}
	case "tool":
		keys = []string{"ok", "content", "data"}
	case "executor":
		out := call.get("out")
		if out == nil || out.kind != 's' {
			return
		}
		// Only a schema that allows no other keys says which keys the result has.
		sch := d.schemas[out.str]
		if sch == nil || sch.kind != 'o' {
			return
		}
		if ap := sch.get("additionalProperties"); ap == nil || ap.kind != 'b' || ap.b {
			return
		}
		props, _ := d.topProperties(out.str)
		keys = props
	default:
		return
	}
	root := pathRoot(pv.str)
	for _, k := range keys {
		if k == root {
			return
		}
	}
	d.sh.add(pv.off, ptr+"/"+field, CodePathUnwritten, "a poll reads the call's own result, which has no %q here: it has %s", root, strings.Join(keys, ", "))
}
