package learning

import (
	"strings"
	"testing"
)

const okWorkflow = `{"v": 2, "name": "Tally Items!",
 "schemas": {"In": {"type": "object", "required": ["items"]}, "Out": {"type": "object"}},
 "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
 "root": {"node": "code", "label": "n", "code": "(s) => ({ n: s.items.length })"}}`

// The folder's skills and workflows as a run is offered them: a folder with a valid SKILL.md is a
// skill (its other files with it), one without is left out saying why; a runnable workflow is a
// tool named from its name with its input schema, one that does not validate or whose tool name
// is taken is left out saying why.
func TestSkillsAndWorkflows(t *testing.T) {
	files := []File{
		{Path: "notes/deploy.md", Content: deployNote},
		{Path: "skills/tally/SKILL.md", Content: "---\nname: tally\ndescription: Count items.\n---\nUse workflow_tally_items.\n"},
		{Path: "skills/tally/ref.md", Content: "more"},
		{Path: "skills/broken/SKILL.md", Content: "no front matter"},
		{Path: "skills/nomd/notes.txt", Content: "x"},
		{Path: "skills/other/SKILL.md", Content: "---\nname: tally\ndescription: Count items.\n---\nx\n"},
		{Path: "workflows/a.json", Content: okWorkflow},
		{Path: "workflows/b.json", Content: strings.Replace(okWorkflow, "Tally Items!", "tally items", 1)},
		{Path: "workflows/bad.json", Content: `{"v": 2}`},
	}
	skills, bad := Skills(files)
	if len(skills) != 1 || skills[0].Metadata.Name != "tally" || skills[0].Spec.Description != "Count items." || len(skills[0].Spec.Files) != 2 {
		t.Fatalf("skills: %+v", skills)
	}
	if len(bad) != 3 || !strings.Contains(bad[0], "skills/broken") || !strings.Contains(bad[1], "skills/nomd has no SKILL.md") || !strings.Contains(bad[2], `skills/other: SKILL.md names the skill "tally"`) {
		t.Errorf("skills left out: %q", bad)
	}
	wfs, bad := Workflows(files)
	if len(wfs) != 1 || wfs[0].Tool != "workflow_tally_items" || wfs[0].Path != "workflows/a.json" || !strings.Contains(string(wfs[0].InputSchema), `"required": ["items"]`) {
		t.Fatalf("workflows: %+v", wfs)
	}
	if len(bad) != 2 || !strings.Contains(bad[0], "workflows/b.json: its tool name workflow_tally_items is workflows/a.json's") || !strings.HasPrefix(bad[1], "workflows/bad.json: ") {
		t.Errorf("workflows left out: %q", bad)
	}
	if n := ToolName(strings.Repeat("x", 100)); len(n) != 64 {
		t.Errorf("ToolName of a long name is %d characters", len(n))
	}
	if n := ToolName("***"); n != "workflow_unnamed" {
		t.Errorf("ToolName(***) = %q", n)
	}
}
