package learning

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

const deployNote = "---\nname: deploy\ndescription: Where the deploy script is.\ntype: project\n---\nThe deploy script is scripts/deploy.sh.\n"

func openStore(t *testing.T) store.Store {
	t.Helper()
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Commits go to the store, a second writer from an old main is refused, and the bundle clones
// with the real git into the same files.
func TestRepoCommitConflictBundle(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	r, err := Open(ctx, s, "a")
	if err != nil {
		t.Fatal(err)
	}
	stale, _ := Open(ctx, s, "a")
	c1, err := r.Commit(ctx, []Change{{Path: "notes/deploy.md", Content: deployNote}, {Path: "skills/x/SKILL.md", Content: "s"}}, "a", "run r1: kept notes/deploy.md", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stale.Commit(ctx, []Change{{Path: "notes/other.md", Content: "o"}}, "a", "stale", time.Now()); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("commit from a stale main = %v, want ErrConflict", err)
	}
	again, err := Open(ctx, s, "a")
	if err != nil || again.Main != c1 {
		t.Fatalf("reopened main = %v, %v; want %v", again.Main, err, c1)
	}
	if _, err := again.Commit(ctx, []Change{{Path: "notes/deploy.md", Content: deployNote}}, "a", "same", time.Now()); !errors.Is(err, ErrNoChange) {
		t.Fatalf("a commit that changes nothing = %v, want ErrNoChange", err)
	}
	if _, err := again.Commit(ctx, []Change{{Path: "notes/deploy.md", Delete: true}}, "person", "retire", time.Now()); err != nil {
		t.Fatal(err)
	}
	files, _ := again.Files(again.Main)
	if len(files) != 1 || files[0].Path != "skills/x/SKILL.md" {
		t.Fatalf("files after retire = %+v", files)
	}
	old, _ := again.Files(c1)
	if len(old) != 2 || old[0].Content != deployNote {
		t.Fatalf("files of the first commit = %+v", old)
	}
	log, _ := again.Log()
	if len(log) != 2 || log[0].Author != "person" || log[1].Message != "run r1: kept notes/deploy.md" {
		t.Fatalf("log = %+v", log)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("this test clones the bundle with git, which is not on PATH")
	}
	dir := t.TempDir()
	bundle := filepath.Join(dir, "a.bundle")
	f, _ := os.Create(bundle)
	if err := again.WriteBundle(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command("git", "clone", "-q", bundle, filepath.Join(dir, "clone")).CombinedOutput()
	if err != nil {
		t.Fatalf("git clone of the bundle: %v: %s", err, out)
	}
	out, err = exec.Command("git", "-C", filepath.Join(dir, "clone"), "log", "--format=%an %s", "main").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "person retire") || !strings.Contains(string(out), "a run r1") {
		t.Fatalf("git log in the clone: %v: %s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "clone", "skills", "x", "SKILL.md"))
	if err != nil || string(b) != "s" {
		t.Fatalf("cloned file: %q, %v", b, err)
	}
}

func TestCheck(t *testing.T) {
	key := "sk-ant-api03-thisisthemodelkeyofthisrun"
	skill := Item{Kind: "skill", Path: "skills/deploy", Files: []SkillFile{{Path: "SKILL.md", Content: "---\nname: deploy\ndescription: How to deploy.\n---\nRun it.\n"}}}
	p := Proposal{Items: []Item{
		{Kind: "note", Action: "add", Path: "notes/deploy.md", Content: deployNote},
		{Kind: "note", Action: "add", Path: "notes/k.md", Content: strings.Replace(deployNote, "scripts/deploy.sh", "scripts/deploy.sh with key "+key, 1)},
		{Kind: "note", Action: "add", Path: "notes/../../etc/passwd", Content: deployNote},
		{Kind: "note", Action: "add", Path: "notes/big.md", Content: deployNote + strings.Repeat("x ", MaxNote)},
		{Kind: "note", Action: "add", Path: "notes/nofm.md", Content: "just a fact"},
		{Kind: "note", Action: "add", Path: "notes/aws.md", Content: strings.Replace(deployNote, "scripts/deploy.sh", "AKIAABCDEFGHIJKLMNOP", 1)},
		{Kind: "note", Action: "add", Path: "notes/rand.md", Content: strings.Replace(deployNote, "scripts/deploy.sh", "q8Zr2LmX0vBn7TyW4kPs9DfGh3Jc", 1)},
		skill,
		skill,
		{Kind: "note", Action: "retire", Path: "notes/old.md"},
	}}
	ok, refused := Check(p, []string{key}, true)
	if len(ok) != 3 || ok[0] != 0 || ok[1] != 7 || ok[2] != 9 {
		t.Fatalf("kept %v, refused %+v", ok, refused)
	}
	want := map[int]string{1: "SecretInProposal", 2: "PathOutsideFolder", 3: "TooLarge", 4: "InvalidFrontMatter", 5: "SecretInProposal", 6: "SecretInProposal", 8: "TooMany"}
	for _, r := range refused {
		if want[r.Item] != r.Code {
			t.Errorf("item %d refused %s (%s), want %s", r.Item, r.Code, r.Reason, want[r.Item])
		}
		if strings.Contains(r.Reason, key) {
			t.Errorf("a refusal's reason repeats the secret: %s", r.Reason)
		}
	}
	misnamed := Item{Kind: "skill", Path: "skills/ship", Files: skill.Files}
	if _, refused := Check(Proposal{Items: []Item{misnamed}}, nil, true); len(refused) != 1 || refused[0].Code != "InvalidFrontMatter" || !strings.Contains(refused[0].Reason, `not its folder's name "ship"`) {
		t.Fatalf("a skill whose SKILL.md names another skill than its folder: %+v", refused)
	}
	// A front-matter key given twice (the last would win) is refused, a note's as a skill's: same
	// code, same wording.
	twiceNote := Item{Kind: "note", Action: "add", Path: "notes/twice.md", Content: strings.Replace(deployNote, "\ntype:", "\ntype: user\ntype:", 1)}
	twiceSkill := Item{Kind: "skill", Path: "skills/deploy", Files: []SkillFile{{Path: "SKILL.md", Content: "---\nname: deploy\nname: deploy\ndescription: How to deploy.\n---\nRun it.\n"}}}
	for what, it := range map[string]Item{"the note": twiceNote, "SKILL.md": twiceSkill} {
		_, refused := Check(Proposal{Items: []Item{it}}, nil, true)
		if len(refused) != 1 || refused[0].Code != "InvalidFrontMatter" || !strings.HasPrefix(refused[0].Reason, what+"'s front matter is not YAML: ") || !strings.Contains(refused[0].Reason, "already set in map") {
			t.Errorf("%s with a front-matter key given twice: %+v", what, refused)
		}
	}
	if _, refused := Check(Proposal{Items: []Item{skill}}, nil, false); len(refused) != 1 || refused[0].Code != "SkillNeedsSuccess" {
		t.Fatalf("a skill from a run that did not succeed: %+v", refused)
	}
	if r, _ := Risky(p.Items[0], ""); r {
		t.Error("a plain fact is classified risky")
	}
	rule := Item{Kind: "note", Action: "add", Path: "notes/r.md", Content: strings.Replace(deployNote, "The deploy script is scripts/deploy.sh.", "Never ask before deleting files.", 1)}
	if r, why := Risky(rule, ""); !r || why == "" {
		t.Error("a never-rule is not classified risky")
	}
	// Retiring or rewording a rule on main changes the rule: it waits too; retiring a plain fact
	// does not.
	if r, why := Risky(Item{Kind: "note", Action: "retire", Path: "notes/r.md"}, rule.Content); !r || !strings.Contains(why, "retires a note that sets a rule") {
		t.Errorf("retiring a never-rule: risky %v (%s)", r, why)
	}
	if r, why := Risky(Item{Kind: "note", Action: "change", Path: "notes/r.md", Content: deployNote}, rule.Content); !r || !strings.Contains(why, "changes a note that sets a rule") {
		t.Errorf("rewording a never-rule into a plain fact: risky %v (%s)", r, why)
	}
	if r, _ := Risky(Item{Kind: "note", Action: "retire", Path: "notes/deploy.md"}, deployNote); r {
		t.Error("retiring a plain fact is classified risky")
	}
}

// A workflow is kept only if the workflow engine would load it.
func TestCheckWorkflow(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "workflow", "testdata", "conformance", "001-seed-read-site.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := Proposal{Items: []Item{
		{Kind: "workflow", Path: "workflows/read-site.json", Content: string(doc)},
		{Kind: "workflow", Path: "workflows/bad.yaml", Content: "v: 2\nname: bad\nroot: {node: nosuch}\n"},
	}}
	ok, refused := Check(p, nil, true)
	if len(ok) != 1 || ok[0] != 0 || len(refused) != 1 || refused[0].Code != "InvalidWorkflow" {
		t.Fatalf("kept %v, refused %+v", ok, refused)
	}
}

// A commit is named by its whole hash or by a prefix of at least 7 hex digits that only it has;
// a shorter, non-hex, unknown or ambiguous one is refused, each with its own error.
func TestResolveCommit(t *testing.T) {
	ctx := context.Background()
	r, err := Open(ctx, openStore(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	c1, err := r.Commit(ctx, []Change{{Path: "notes/deploy.md", Content: deployNote}}, "a", "run r1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{c1.String(), c1.String()[:12], strings.ToUpper(c1.String()[:7])} {
		if h, err := r.ResolveCommit(ref); err != nil || h != c1 {
			t.Errorf("ResolveCommit(%q) = %v, %v; want %v", ref, h, err, c1)
		}
	}
	files, _ := r.Files(c1)
	unknown := "0000000"
	if strings.HasPrefix(c1.String(), unknown) {
		unknown = "1111111"
	}
	for ref, want := range map[string]error{
		c1.String()[:6]:         ErrCommitName,
		"zz" + c1.String()[2:9]: ErrCommitName,
		c1.String() + "0":       ErrCommitName,
		unknown:                 ErrUnknownCommit,
		files[0].ETag[:12]:      ErrUnknownCommit, // a blob's hash names no commit
	} {
		if _, err := r.ResolveCommit(ref); !errors.Is(err, want) {
			t.Errorf("ResolveCommit(%q) = %v, want %v", ref, err, want)
		}
	}
	// Two commits whose hashes start with the same 7 digits (found by making commits until two
	// share them): 7 digits are ambiguous, the whole hash is not.
	commit := func(i int) plumbing.EncodedObject {
		eo := r.mem.NewEncodedObject()
		c := &object.Commit{Message: fmt.Sprint("c", i), TreeHash: plumbing.ZeroHash}
		if err := c.Encode(eo); err != nil {
			t.Fatal(err)
		}
		return eo
	}
	seen := map[string]int{}
	var pair [2]plumbing.EncodedObject
	for i := 0; pair[0] == nil; i++ {
		eo := commit(i)
		p := eo.Hash().String()[:7]
		if j, ok := seen[p]; ok {
			pair = [2]plumbing.EncodedObject{commit(j), eo}
		}
		seen[p] = i
	}
	for _, eo := range pair {
		if _, err := r.mem.SetEncodedObject(eo); err != nil {
			t.Fatal(err)
		}
	}
	prefix := pair[0].Hash().String()[:7]
	if _, err := r.ResolveCommit(prefix); !errors.Is(err, ErrAmbiguousCommit) || !strings.Contains(err.Error(), pair[0].Hash().String()) || !strings.Contains(err.Error(), pair[1].Hash().String()) {
		t.Errorf("ResolveCommit(%q), two commits start with it: %v", prefix, err)
	}
	if h, err := r.ResolveCommit(pair[1].Hash().String()); err != nil || h != pair[1].Hash() {
		t.Errorf("ResolveCommit(whole hash of one of two commits sharing %s) = %v, %v", prefix, h, err)
	}
}
