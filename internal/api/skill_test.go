package api

import (
	"strings"
	"testing"
)

func skillWith(files ...SkillFile) *Skill { return &Skill{Spec: SkillSpec{Files: files}} }

func md(s string) SkillFile { return SkillFile{Path: SkillFileName, Content: s} }

func TestDefaultAndValidateSkill(t *testing.T) {
	t.Parallel()
	good := "---\nname: pdf-forms\ndescription: Fill PDF forms.\nlicense: MIT\n---\n# Forms\n"
	s := skillWith(SkillFile{Path: "ref/b.md", Content: "b"}, md(good))
	if err := DefaultAndValidateSkill(s); err != nil {
		t.Fatal(err)
	}
	if s.Metadata.Name != "pdf-forms" || s.Spec.Description != "Fill PDF forms." || s.Spec.Files[0].Path != SkillFileName || !strings.HasPrefix(s.Spec.Digest, "sha256:") {
		t.Errorf("defaulted skill: %+v", s)
	}
	// The same files in another order have the same digest; other content another.
	s2 := skillWith(md(good), SkillFile{Path: "ref/b.md", Content: "b"})
	s3 := skillWith(md(good), SkillFile{Path: "ref/b.md", Content: "c"})
	if DefaultAndValidateSkill(s2) != nil || DefaultAndValidateSkill(s3) != nil || s2.Spec.Digest != s.Spec.Digest || s3.Spec.Digest == s.Spec.Digest {
		t.Errorf("digests: %s %s %s", s.Spec.Digest, s2.Spec.Digest, s3.Spec.Digest)
	}
	cases := []struct {
		name        string
		s           *Skill
		code, field string
	}{
		{"no front matter", skillWith(md("# Forms\n")), "Invalid", "SKILL.md"},
		{"unclosed", skillWith(md("---\nname: x\ndescription: y\n")), "Invalid", "SKILL.md"},
		{"not YAML", skillWith(md("---\nname: [x\n---\n")), "Invalid", "SKILL.md"},
		{"a key twice", skillWith(md("---\nname: x\nname: y\ndescription: d\n---\n")), "Invalid", "SKILL.md"},
		{"no name", skillWith(md("---\ndescription: y\n---\n")), "Required", "SKILL.md: name"},
		{"bad name", skillWith(md("---\nname: PDF Forms\ndescription: y\n---\n")), "Invalid", "SKILL.md: name"},
		{"empty description", skillWith(md("---\nname: x\ndescription: ''\n---\n")), "Invalid", "SKILL.md: description"},
		{"no SKILL.md", skillWith(SkillFile{Path: "a.md", Content: "a"}), "Required", "spec.files"},
		{"no files", skillWith(), "Required", "spec.files"},
		{"escaping path", skillWith(md(good), SkillFile{Path: "../x", Content: "a"}), "Invalid", "spec.files[1].path"},
		{"absolute path", skillWith(md(good), SkillFile{Path: "/etc/x", Content: "a"}), "Invalid", "spec.files[1].path"},
		{"unclean path", skillWith(md(good), SkillFile{Path: "a//b", Content: "a"}), "Invalid", "spec.files[1].path"},
		{"twice", skillWith(md(good), md(good)), "Invalid", "spec.files[1].path"},
		{"bad base64", skillWith(md(good), SkillFile{Path: "x.bin", Content: "!!", Base64: true}), "Invalid", "spec.files[1].content"},
		{"over 1 MiB", skillWith(md(good), SkillFile{Path: "big", Content: strings.Repeat("x", MaxSkillBytes)}), "PayloadTooLarge", "spec.files"},
		{"version given", &Skill{Spec: SkillSpec{Version: 3, Files: []SkillFile{md(good)}}}, "Invalid", "spec.version"},
		{"other name", &Skill{Metadata: ObjectMeta{Name: "other"}, Spec: SkillSpec{Files: []SkillFile{md(good)}}}, "Invalid", "metadata.name"},
	}
	for _, c := range cases {
		err := DefaultAndValidateSkill(c.s)
		e, ok := AsError(err)
		if !ok || string(e.Code) != c.code || e.Field != c.field {
			t.Errorf("%s: %v, want %s on %s", c.name, err, c.code, c.field)
		}
	}
}

func TestParseSkillRef(t *testing.T) {
	t.Parallel()
	for ref, want := range map[string]int{"pdf": 0, "pdf@1": 1, "pdf@12": 12} {
		if _, v, err := ParseSkillRef(ref); err != nil || v != want {
			t.Errorf("%s: %d, %v", ref, v, err)
		}
	}
	for _, bad := range []string{"", "PDF", "pdf@", "pdf@0", "pdf@01", "pdf@x", "a/b"} {
		if _, _, err := ParseSkillRef(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	b := NewSkillFile("x.bin", []byte{0xff, 0})
	if got, err := b.Bytes(); err != nil || !b.Base64 || len(got) != 2 {
		t.Errorf("binary file: %+v %v", b, err)
	}
}
