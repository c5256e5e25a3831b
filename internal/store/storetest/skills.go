package storetest

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

func newSkill(t *testing.T, name, body string, extra ...api.SkillFile) *api.Skill {
	t.Helper()
	s := &api.Skill{Spec: api.SkillSpec{Files: append([]api.SkillFile{{Path: api.SkillFileName,
		Content: "---\nname: " + name + "\ndescription: Does " + name + " things.\n---\n" + body}}, extra...)}}
	if err := api.DefaultAndValidateSkill(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Skills: each other content of a name is its next version, the same content again is the
// version that holds it, versions never change, and list leaves the contents out.
func testSkills(t *testing.T, open opener) {
	s := open(t)
	v1 := newSkill(t, "pdf", "# PDF\n", api.SkillFile{Path: "ref/forms.md", Content: "forms"}, api.NewSkillFile("logo.bin", []byte{0xff, 0, 1}))
	created, err := s.PutSkill(bg, v1)
	if err != nil || !created || v1.Spec.Version != 1 || v1.Metadata.UID == "" || v1.Metadata.CreationTimestamp == nil {
		t.Fatalf("PutSkill = %v, %v: %+v", created, err, v1.Metadata)
	}
	again := newSkill(t, "pdf", "# PDF\n", api.NewSkillFile("logo.bin", []byte{0xff, 0, 1}), api.SkillFile{Path: "ref/forms.md", Content: "forms"})
	if created, err := s.PutSkill(bg, again); err != nil || created || again.Spec.Version != 1 || again.Metadata.UID != v1.Metadata.UID {
		t.Errorf("PutSkill of the same content = %v, %v, version %d; want version 1 unchanged", created, err, again.Spec.Version)
	}
	v2 := newSkill(t, "pdf", "# PDF, second edition\n")
	if created, err := s.PutSkill(bg, v2); err != nil || !created || v2.Spec.Version != 2 {
		t.Fatalf("PutSkill of new content = %v, %v, version %d; want 2", created, err, v2.Spec.Version)
	}
	if _, err := s.PutSkill(bg, newSkill(t, "xlsx", "# XLSX\n")); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSkill(bg, "pdf", 1)
	if err != nil || len(got.Spec.Files) != 3 || got.Spec.Files[2].Content != "forms" || got.Spec.Digest != v1.Spec.Digest || got.Spec.Description != "Does pdf things." {
		t.Fatalf("GetSkill(pdf, 1) = %+v, %v", got, err)
	}
	if md, _ := got.File(api.SkillFileName); string(md) != "---\nname: pdf\ndescription: Does pdf things.\n---\n# PDF\n" {
		t.Errorf("pdf@1 SKILL.md = %q", md)
	}
	if latest, err := s.GetSkill(bg, "pdf", 0); err != nil || latest.Spec.Version != 2 {
		t.Errorf("GetSkill(pdf, latest) = %+v, %v", latest, err)
	}
	for _, v := range []int{3, 0} {
		name := "pdf"
		if v == 0 {
			name = "nope"
		}
		if _, err := s.GetSkill(bg, name, v); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetSkill(%s, %d) = %v, want ErrNotFound", name, v, err)
		}
	}
	l, err := s.ListSkills(bg)
	if err != nil || len(l) != 3 {
		t.Fatalf("ListSkills = %d, %v", len(l), err)
	}
	if l[0].Ref() != "pdf@1" || l[1].Ref() != "pdf@2" || l[2].Ref() != "xlsx@1" {
		t.Errorf("ListSkills order: %s %s %s", l[0].Ref(), l[1].Ref(), l[2].Ref())
	}
	if bin, ok := got.File("logo.bin"); !ok || !bytes.Equal(bin, []byte{0xff, 0, 1}) {
		t.Errorf("pdf@1 logo.bin = %v, %v", bin, ok)
	}
	if len(l[0].Spec.Files) != 3 || l[0].Spec.Files[2].Path != "ref/forms.md" || l[0].Spec.Files[2].Content != "" {
		t.Errorf("ListSkills files: %+v (want paths without contents)", l[0].Spec.Files)
	}

	// Adds of one name at once get distinct versions, and the same content one version.
	var wg sync.WaitGroup
	versions := make([]int, 6)
	for i := range versions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := "# concurrent " + string(rune('a'+i%3)) + "\n"
			sk := newSkill(t, "race", body)
			if _, err := s.PutSkill(bg, sk); err != nil {
				t.Errorf("concurrent PutSkill: %v", err)
			}
			versions[i] = sk.Spec.Version
		}()
	}
	wg.Wait()
	for i := range 3 {
		if versions[i] != versions[i+3] {
			t.Errorf("the same content got versions %d and %d", versions[i], versions[i+3])
		}
	}
	if l, _ := s.ListSkills(bg); len(l) != 6 {
		t.Errorf("after the race: %d versions in all, want 3 of race and 3 others", len(l))
	}
}
