package workflow

import (
	"encoding/json"
	"fmt"
)

// Workflow is a validated document, ready to run.
type Workflow struct {
	V       int                        `json:"v"`
	Name    string                     `json:"name"`
	Schemas map[string]json.RawMessage `json:"schemas"`
	Input   *struct {
		SchemaID string `json:"schemaId"`
	} `json:"input,omitempty"`
	Output struct {
		SchemaID string `json:"schemaId"`
		Path     string `json:"path,omitempty"`
	} `json:"output"`
	Root *Node `json:"root"`

	schemas *schemaSet
	// Raw is the document as written.
	Raw json.RawMessage `json:"-"`
}

// Node is one node of any kind; the fields a kind does not have stay empty.
type Node struct {
	Kind         string                     `json:"node"`
	Label        string                     `json:"label,omitempty"`
	Steps        []*Node                    `json:"steps,omitempty"`
	Code         string                     `json:"code,omitempty"`
	As           string                     `json:"as,omitempty"`
	State        map[string]any             `json:"state,omitempty"`
	Instructions string                     `json:"instructions,omitempty"`
	Out          string                     `json:"out,omitempty"`
	Requires     []string                   `json:"requires,omitempty"`
	Tools        []string                   `json:"tools,omitempty"`
	Tier         string                     `json:"tier,omitempty"`
	Type         string                     `json:"type,omitempty"`
	Path         string                     `json:"path,omitempty"`
	ItemsPath    string                     `json:"itemsPath,omitempty"`
	Body         *Node                      `json:"body,omitempty"`
	ResultPath   string                     `json:"resultPath,omitempty"`
	MaxConc      int                        `json:"maxConcurrency,omitempty"`
	BranchesRaw  json.RawMessage            `json:"branches,omitempty"`
	Until        *Predicate                 `json:"until,omitempty"`
	MaxIters     int                        `json:"maxIters,omitempty"`
	When         *Predicate                 `json:"when,omitempty"`
	EscKind      string                     `json:"kind,omitempty"`
	Stage        string                     `json:"stage,omitempty"`
	Summary      string                     `json:"summary,omitempty"`
	Via          string                     `json:"via,omitempty"`
	Tool         string                     `json:"tool,omitempty"`
	Args         map[string]any             `json:"args,omitempty"`
	Input        map[string]any             `json:"input,omitempty"`
	Command      string                     `json:"command,omitempty"`
	Env          map[string]string          `json:"env,omitempty"`
	Produces     []string                   `json:"produces,omitempty"`
	DeadlineS    float64                    `json:"deadline_s,omitempty"`
	Retry        *Retry                     `json:"retry,omitempty"`
	ChildRaw     json.RawMessage            `json:"workflow,omitempty"`
	Describe     string                     `json:"describe,omitempty"`
	AllowNone    bool                       `json:"allowNone,omitempty"`
	Unsure       *Unsure                    `json:"unsure,omitempty"`
	ValuePath    string                     `json:"valuePath,omitempty"`
	Otherwise    string                     `json:"otherwise,omitempty"`
	Metadata     map[string]json.RawMessage `json:"metadata,omitempty"`
	Poll         *Poll                      `json:"poll,omitempty"`
	Verify       *Verify                    `json:"verify,omitempty"`
	Keep         *Keep                      `json:"keep,omitempty"`
	// Kept so that a run refuses what the engine does not do yet, rather than ignoring it.
	SOPSection string `json:"sopSection,omitempty"`

	// Decoded by build from BranchesRaw and ChildRaw.
	Parallel []*Node       `json:"-"`
	Routes   []RouteBranch `json:"-"`
	Child    *Workflow     `json:"-"`
}

// RouteBranch is one named branch of a route.
type RouteBranch struct {
	Name     string `json:"-"`
	Criteria string `json:"criteria,omitempty"`
	Body     *Node  `json:"body"`
}

// Predicate is a loop's until, an escalate's when, a poll's until.
type Predicate struct {
	Predicate    string                        `json:"predicate"`
	Path         string                        `json:"path,omitempty"`
	Value        any                           `json:"value,omitempty"`
	Values       []any                         `json:"values,omitempty"`
	N            float64                       `json:"n,omitempty"`
	Key          string                        `json:"key,omitempty"`
	Instructions string                        `json:"instructions,omitempty"`
	State        map[string]any                `json:"state,omitempty"`
	Criteria     *struct{ True, False string } `json:"criteria,omitempty"`
	Gte          float64                       `json:"gte,omitempty"`
}

// Retry is a call's retry policy.
type Retry struct {
	Attempts int      `json:"attempts"`
	BackoffS float64  `json:"backoff_s,omitempty"`
	On       []string `json:"on,omitempty"`
}

// Poll repeats a call until its own result meets Until (or FailWhen fails it), IntervalS apart,
// for at most DeadlineS from the first issue.
type Poll struct {
	Until     *Predicate `json:"until"`
	FailWhen  *Predicate `json:"fail_when,omitempty"`
	IntervalS float64    `json:"interval_s"`
	DeadlineS float64    `json:"deadline_s"`
}

// Verify is a generative node's reviewer: a question schema asked of each submission.
type Verify struct {
	Out       string         `json:"out"`
	State     map[string]any `json:"state,omitempty"`
	MaxDrives int            `json:"maxDrives,omitempty"`
	Override  *struct {
		Below float64 `json:"below"`
	} `json:"override,omitempty"`
}

// Keep is a sift's filter: the items whose answer at Path is at least Gte.
type Keep struct {
	Path string   `json:"path"`
	Gte  *float64 `json:"gte,omitempty"`
}

// Unsure is a route's low-confidence branch.
type Unsure struct {
	Branch string  `json:"branch"`
	Gte    float64 `json:"gte"`
}

// build decodes a valid document into its typed form and compiles its schemas.
func build(raw []byte, opt Options) (*Workflow, error) {
	var w Workflow
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("decode workflow: %w", err)
	}
	w.Raw = append(json.RawMessage(nil), raw...)
	sh := &shared{lines: newLineIndex(raw)}
	root, err := parse(raw, &sh.errs, sh.lines)
	if err != nil {
		return nil, err
	}
	d := &doc{sh: sh, schemas: map[string]*value{}}
	if s := root.get("schemas"); s != nil {
		for _, m := range s.mem {
			d.schemas[m.key] = m.val
		}
		w.schemas = compileSchemas(d, s, "/schemas")
	}
	if err := w.Root.decode(opt); err != nil {
		return nil, err
	}
	return &w, nil
}

func (n *Node) decode(opt Options) error {
	if n == nil {
		return nil
	}
	for _, s := range n.Steps {
		if err := s.decode(opt); err != nil {
			return err
		}
	}
	if err := n.Body.decode(opt); err != nil {
		return err
	}
	switch n.Kind {
	case "parallel":
		if err := json.Unmarshal(n.BranchesRaw, &n.Parallel); err != nil {
			return err
		}
		for _, b := range n.Parallel {
			if err := b.decode(opt); err != nil {
				return err
			}
		}
	case "route":
		// Branch order is the document's (the object's key order), kept by the tree parser.
		var errs []Error
		t, err := parse(n.BranchesRaw, &errs, newLineIndex(n.BranchesRaw))
		if err != nil {
			return err
		}
		for _, m := range t.mem {
			var b RouteBranch
			enc, err := json.Marshal(m.val.toAny())
			if err != nil {
				return err
			}
			if err := json.Unmarshal(enc, &b); err != nil {
				return err
			}
			b.Name = m.key
			if err := b.Body.decode(opt); err != nil {
				return err
			}
			n.Routes = append(n.Routes, b)
		}
	case "workflow":
		raw := []byte(n.ChildRaw)
		var name string
		if json.Unmarshal(n.ChildRaw, &name) == nil {
			if opt.Resolve == nil && opt.DeferNamed {
				return nil
			}
			if opt.Resolve == nil {
				return fmt.Errorf("child workflow %q: nothing resolves names", name)
			}
			r, err := opt.Resolve(name)
			if err != nil {
				return err
			}
			raw = r
		}
		c, err := build(raw, opt)
		if err != nil {
			return err
		}
		n.Child = c
	}
	return nil
}

// CheckInput validates a run's input against the document's input schema.
func (w *Workflow) CheckInput(in map[string]any) error {
	if w.Input == nil {
		return nil
	}
	if err := w.schemas.check(w.Input.SchemaID, in); err != nil {
		return fmt.Errorf("the input does not match schema %q: %w", w.Input.SchemaID, err)
	}
	return nil
}
