package catalog

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, tool, input string
		key               string   // the key the error names (InputError.Key)
		want              []string // in the message
	}{
		{"case variant alone", "bash", `{"Command": "curl --version"}`, "Command", []string{`"Command"`, `did you mean "command"`}},
		{"case variant after the key", "bash", `{"command": "ls", "Command": "touch x; curl x"}`, "Command", []string{`"command" and "Command" differ only in case`}},
		{"case variant before the key", "bash", `{"COMMAND": "curl x", "command": "ls"}`, "command", []string{`"COMMAND" and "command"`}},
		{"duplicate key", "bash", `{"command": "ls", "command": "curl x"}`, "command", []string{`key "command" is given twice`}},
		{"duplicate escaped key", "bash", `{"command": "ls", "comm\u0061nd": "curl x"}`, "command", []string{`given twice`}},
		{"long s folds to s", "bash", `{"command": "ls", "workdir": "a", "ſ": 1}`, "ſ", []string{`unknown field "ſ"`}},
		{"kelvin sign is k", "desktop_key", "{\"\u212aeys\": \"Return\"}", "\u212aeys", []string{`did you mean "keys"`}},
		{"unknown key", "bash", `{"command": "ls", "shell": "zsh"}`, "shell", []string{`unknown field "shell"`, "command, timeout_s, background, workdir"}},
		{"unknown key on a tool with no fields", "bash_list", `{"all": true}`, "all", []string{`unknown field "all"`}},
		{"nested value", "bash", `{"command": {"a": 1}}`, "command", []string{`field "command" must be a string, got an object`}},
		{"nested duplicate", "bash", `{"command": "ls", "workdir": [{"a": 1, "a": 2}]}`, "a", []string{`key "a" is given twice (in "workdir")`}},
		{"nested case variant", "write", `{"path": "x", "content": "c", "z": {"b": {"k": 1, "K": 2}}}`, "K", []string{`differ only in case (in "z")`}},
		{"missing required", "bash", `{"timeout_s": 5}`, "command", []string{`missing required field "command" (string)`}},
		{"below minimum", "bash", `{"command": "ls", "timeout_s": 0}`, "timeout_s", []string{`must be at least 1`}},
		{"above maximum", "bash", `{"command": "ls", "timeout_s": 601}`, "timeout_s", []string{`must be at most 600`}},
		{"not in enum", "desktop_scroll", `{"x": 1, "y": 1, "direction": "sideways"}`, "direction", []string{`one of up, down, left, right`}},
		{"not an object", "bash", `["ls"]`, "", []string{"must be a JSON object with fields: command"}},
		{"not JSON", "bash", `{"command": "ls"`, "", []string{"not valid JSON"}},
		{"white space JSON does not allow", "bash_list", "\v{}", "", []string{"not valid JSON"}},
		{"trailing data", "bash", `{"command": "ls"} {"command": "curl x"}`, "", []string{"not valid JSON"}},
		{"integer overflow", "desktop_move", `{"x": 99999999999999999999, "y": 1}`, "x", []string{`field "x" must be an integer`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode(c.tool, json.RawMessage(c.input))
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("Decode(%s, %s) = %v, want an InputError", c.tool, c.input, err)
			}
			if ie.Key != c.key || ie.Tool != c.tool {
				t.Errorf("error names tool %q key %q, want %q %q (%s)", ie.Tool, ie.Key, c.tool, c.key, ie.Msg)
			}
			for _, w := range c.want {
				if !strings.Contains(ie.Msg, w) {
					t.Errorf("message %q lacks %q", ie.Msg, w)
				}
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	t.Parallel()
	in, err := Decode("bash", json.RawMessage(`{"command": "go test ./...", "timeout_s": 60.0, "background": null, "workdir": "src"}`))
	if err != nil {
		t.Fatal(err)
	}
	b := in.Value.(*Bash)
	if b.Command != "go test ./..." || b.TimeoutS == nil || *b.TimeoutS != 60 || b.Background || b.Workdir != "src" {
		t.Fatalf("decoded %+v", b)
	}
	if c, ok := in.Command(); !ok || c != "go test ./..." || in.Arg() != c || in.Title() != c {
		t.Fatalf("Command %q %v, Arg %q, Title %q", c, ok, in.Arg(), in.Title())
	}
	// Empty input and null are {}; a tool without fields takes them.
	for _, raw := range []string{``, `null`, ` {} `} {
		if _, err := Decode("bash_list", json.RawMessage(raw)); err != nil {
			t.Errorf("bash_list %q: %v", raw, err)
		}
	}
	// A file tool's command field is no shell call: write has no such field at all.
	if _, err := Decode("write", json.RawMessage(`{"path": "x", "content": "y", "command": "z"}`)); err == nil {
		t.Error("write took a command")
	}
	in, err = Decode("grep", json.RawMessage(`{"pattern": "TODO"}`))
	if err != nil || in.Arg() != "TODO" || !in.IsPath() {
		t.Fatalf("grep: %v %q %v", err, in.Arg(), in.IsPath())
	}
	if _, ok := in.Command(); ok {
		t.Error("grep is a shell call")
	}
	if _, err := Decode("nope", nil); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestDecodeGeneric(t *testing.T) {
	t.Parallel()
	in, err := DecodeGeneric("web_fetch", json.RawMessage(`{"url": "https://example.com/", "n": {"deep": [1, {"x": 2}]}}`))
	if err != nil || in.Arg() != "https://example.com/" {
		t.Fatalf("%v %q", err, in.Arg())
	}
	if _, ok := in.Command(); ok {
		t.Error("a url is a shell call")
	}
	in, err = DecodeGeneric("run_script", json.RawMessage(`{"command": "ls"}`))
	if c, ok := in.Command(); err != nil || !ok || c != "ls" {
		t.Fatalf("generic command: %v %q %v", err, c, ok)
	}
	for _, raw := range []string{`{"command": "ls", "Command": "curl x"}`, `{"url": "a", "url": "b"}`, `{"a": {"b": 1, "B": 2}}`} {
		var ie *InputError
		if _, err := DecodeGeneric("x", json.RawMessage(raw)); !errors.As(err, &ie) || ie.Key == "" {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

// TestCatalogConsistent checks each entry against its typed input: every field declared has a
// Go field of its name and a type Decode fills, and the reverse; the schema is what a model reads.
func TestCatalogConsistent(t *testing.T) {
	t.Parallel()
	for _, e := range All() {
		if len(e.Description) < 40 {
			t.Errorf("%s: description too thin", e.Name)
		}
		var declared []string
		for _, f := range e.Fields {
			declared = append(declared, f.Name)
			if !strings.HasPrefix(e.types[f.Name], "string") && !strings.HasPrefix(e.types[f.Name], "boolean") && !strings.HasPrefix(e.types[f.Name], "integer") {
				t.Errorf("%s.%s: type %q", e.Name, f.Name, e.types[f.Name])
			}
		}
		var goFields []string
		for n := range e.index {
			goFields = append(goFields, n)
		}
		slices.Sort(goFields)
		slices.Sort(declared)
		if !slices.Equal(goFields, declared) {
			t.Errorf("%s: declared fields %v, typed input has %v", e.Name, declared, goFields)
		}
		var s struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(e.Schema, &s); err != nil || s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties || s.Required == nil || len(s.Properties) != len(e.Fields) {
			t.Errorf("%s: schema %s (%v)", e.Name, e.Schema, err)
		}
		if e.Computer != "" && !e.Brings(e.Computer) {
			t.Errorf("%s: runs on a %s, which does not bring it", e.Name, e.Computer)
		}
	}
}

func TestOffered(t *testing.T) {
	t.Parallel()
	sandbox := []string{"read", "write", "edit", "ls", "grep", "bash", "bash_output", "bash_kill", "bash_list"}
	if got := ComputerTools(Sandbox); !slices.Equal(got, sandbox) {
		t.Errorf("sandbox tools %v", got)
	}
	desktop := ComputerTools(Desktop)
	if !slices.Equal(desktop[:len(sandbox)], sandbox) || desktop[len(sandbox)] != "desktop_screenshot" || len(desktop) != len(sandbox)+7 {
		t.Errorf("desktop tools %v", desktop)
	}
	if got := ComputerTools(Browser); !slices.Equal(got, []string{"browser_open", "browser_text", "browser_click", "browser_type", "browser_screenshot"}) {
		t.Errorf("browser tools %v", got)
	}
	if got := ComputerTools("none"); got != nil {
		t.Errorf("kind none brings %v", got)
	}
	// Listed file tools keep their place; a listed computer tool comes with the computer.
	got := Offered(Sandbox, []string{"write", "bash", "ask_person"})
	want := []string{"write", "ask_person", "read", "edit", "ls", "grep", "bash", "bash_output", "bash_kill", "bash_list"}
	if !slices.Equal(got, want) {
		t.Errorf("Offered = %v, want %v", got, want)
	}
	if got := Offered("none", []string{"read", "ask_person"}); !slices.Equal(got, []string{"read", "ask_person"}) {
		t.Errorf("Offered none = %v", got)
	}
}

func TestCheckListed(t *testing.T) {
	t.Parallel()
	if why := CheckListed("dev_count"); why == "" {
		t.Error("dev_count listable without the server")
	}
	if why := CheckListed("bogus"); !strings.Contains(why, `unknown tool "bogus"`) {
		t.Errorf("bogus: %q", why)
	}
	for _, n := range []string{"read", "bash", "browser_open", "desktop_key", "ask_person", "web_fetch"} {
		if why := CheckListed(n); why != "" {
			t.Errorf("%s: %q", n, why)
		}
	}
}

// FuzzDecodeInput checks the strict decoder against encoding/json on any input: a call it
// accepts has every key spelled as a field and given once, and its typed value is exactly what
// encoding/json decodes from the same bytes (so no decoder a tool might use reads other values
// than the policy matched); the policy's strings are the typed value's.
func FuzzDecodeInput(f *testing.F) {
	seeds := []struct{ tool, input string }{
		{"bash", `{"command": "ls"}`},
		{"bash", `{"Command": "curl --version"}`},
		{"bash", `{"command": "ls", "Command": "touch x; curl x"}`},
		{"bash", `{"command": "ls", "command": "curl x", "timeout_s": 1e2}`},
		{"bash", `{"comm\u0061nd": "ls", "background": true, "workdir": null}`},
		{"read", `{"path": "a", "offset": 1.0, "limit": null}`},
		{"desktop_scroll", `{"x": 1, "y": 2, "direction": "up", "clicks": 3}`},
		{"grep", `{"pattern": "x", "path": "p", "glob": "*.go"}`},
		{"x", `{"a": {"b": [1, {"c": 2, "C": 3}]}}`},
		{"ask_person", `{"question": "q", "takeover": false}`},
	}
	for _, s := range seeds {
		which := uint8(255) // a tool the catalog does not have
		for i, e := range entries {
			if e.Name == s.tool {
				which = uint8(i)
			}
		}
		f.Add(which, []byte(s.input))
	}
	// which picks the tool: a catalog entry, or past the end one it does not have.
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		tool := "x"
		var e *Entry
		if int(which) < len(entries) {
			e = entries[which]
			tool = e.Name
		}
		if e == nil {
			in, err := DecodeGeneric(tool, raw)
			if err != nil {
				return
			}
			var m map[string]any
			if s := strings.Trim(string(raw), jsonSpace); s != "" && s != "null" {
				if err := json.Unmarshal(raw, &m); err != nil {
					t.Fatalf("accepted %q, which encoding/json refuses: %v", raw, err)
				}
			}
			if len(m) != len(in.Value.(map[string]any)) {
				t.Fatalf("%q: keys %v, encoding/json has %v", raw, in.Value, m)
			}
			folded := map[string]bool{}
			for k := range m {
				if folded[fold(k)] {
					t.Fatalf("%q: accepted keys differing only in case", raw)
				}
				folded[fold(k)] = true
			}
			return
		}
		in, err := e.Decode(raw)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || ie.Msg == "" {
				t.Fatalf("%s %q: error %v is not an InputError", tool, raw, err)
			}
			return
		}
		// encoding/json decodes the same bytes to the same value.
		std := reflect.New(e.input)
		if err := json.Unmarshal(raw, std.Interface()); err == nil && !reflect.DeepEqual(std.Interface(), in.Value) {
			t.Fatalf("%s %q: decoded %+v, encoding/json %+v", tool, raw, in.Value, std.Elem().Interface())
		}
		// Every key is a field, spelled exactly, once.
		var keys map[string]json.RawMessage
		if json.Unmarshal(raw, &keys) == nil {
			for k := range keys {
				if _, ok := e.field(k); !ok {
					t.Fatalf("%s %q: accepted key %q", tool, raw, k)
				}
			}
		}
		// The strings the policy and the title read are the typed value's.
		v := reflect.ValueOf(in.Value).Elem()
		for name, s := range in.strs {
			if got := reflect.Indirect(v.FieldByIndex(e.index[name])).String(); got != s {
				t.Fatalf("%s %q: policy reads %s=%q, the tool %q", tool, raw, name, s, got)
			}
		}
		if c, ok := in.Command(); ok && tool == "bash" && c != in.Value.(*Bash).Command {
			t.Fatalf("bash %q: policy command %q, tool runs %q", raw, c, in.Value.(*Bash).Command)
		}
	})
}

// web_fetch's approval patterns match its url, whatever other keys are given; skill's its name.
func TestMatchKey(t *testing.T) {
	t.Parallel()
	in, err := Decode(WebFetchName, []byte(`{"method":"GET","url":"https://docs.example.com/a"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := in.Arg(); got != "https://docs.example.com/a" {
		t.Errorf("web_fetch Arg = %q", got)
	}
	in, err = Decode(SkillName, []byte(`{"file":"x.md","name":"pdf"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := in.Arg(); got != "pdf" {
		t.Errorf("skill Arg = %q", got)
	}
	if _, err := Decode(WebFetchName, []byte(`{"url":"https://x","method":"POST"}`)); err == nil {
		t.Error("method POST accepted")
	}
	if got := OfferedWith("none", []string{"web_fetch"}, true); strings.Join(got, ",") != "web_fetch,skill" {
		t.Errorf("OfferedWith = %v", got)
	}
}
