package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// Skill is one version of a skill: a folder with SKILL.md (YAML front matter with name and
// description, then markdown) and files beside it, the Agent Skills format. Each add of other
// content makes the next version; a version never changes.
type Skill struct {
	TypeMeta `json:",inline"`
	Metadata ObjectMeta `json:"metadata"`
	Spec     SkillSpec  `json:"spec"`
}

// SkillSpec is a skill's content. Version, Description and Digest are the server's: the version
// it was stored as, the front matter's description, and the SHA-256 of the files.
type SkillSpec struct {
	Version     int         `json:"version,omitempty"`
	Description string      `json:"description,omitempty"`
	Digest      string      `json:"digest,omitempty"`
	Files       []SkillFile `json:"files"`
}

// SkillFile is one file of a skill, its path relative to the skill's folder: its content as
// text, or base64 when Base64 is set (a file that is not UTF-8 text).
type SkillFile struct {
	Path    string `json:"path"`
	Content string `json:"content,omitempty"`
	Base64  bool   `json:"base64,omitempty"`
}

// NewSkillFile makes the file at p holding b: as text when b is UTF-8, else base64.
func NewSkillFile(p string, b []byte) SkillFile {
	if utf8.Valid(b) {
		return SkillFile{Path: p, Content: string(b)}
	}
	return SkillFile{Path: p, Content: base64.StdEncoding.EncodeToString(b), Base64: true}
}

// Bytes is the file's content.
func (f SkillFile) Bytes() ([]byte, error) {
	if !f.Base64 {
		return []byte(f.Content), nil
	}
	return base64.StdEncoding.DecodeString(f.Content)
}

// Skill limits: the Agent Skills format's name and description bounds, and the folder's size.
const (
	SkillFileName       = "SKILL.md"
	MaxSkillBytes       = 1 << 20
	maxSkillDescription = 1024
	maxSkillFiles       = 256
)

var skillNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)

// Ref returns name@version.
func (s *Skill) Ref() string { return s.Metadata.Name + "@" + strconv.Itoa(s.Spec.Version) }

// File returns the named file's content.
func (s *Skill) File(p string) ([]byte, bool) {
	for _, f := range s.Spec.Files {
		if f.Path == p {
			b, err := f.Bytes()
			return b, err == nil
		}
	}
	return nil, false
}

// SkillFrontMatter is what SKILL.md's front matter says.
type SkillFrontMatter struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// ParseSkillFrontMatter reads SKILL.md's YAML front matter, between a first line "---" and the
// next "---" line. Other keys (license, metadata, allowed-tools) are the format's and kept as
// written in the file.
func ParseSkillFrontMatter(md []byte) (SkillFrontMatter, *Error) {
	var fm SkillFrontMatter
	md = bytes.TrimPrefix(md, []byte("\uFEFF"))
	rest, ok := cutLine(md, "---")
	if !ok {
		return fm, Invalid(SkillFileName, "SKILL.md has no front matter: it must start with a line \"---\", then name: and description:, then \"---\"")
	}
	var head []byte
	for {
		line, next, found := bytes.Cut(rest, []byte("\n"))
		if strings.TrimRight(string(line), "\r \t") == "---" {
			break
		}
		if !found {
			return fm, Invalid(SkillFileName, "SKILL.md's front matter has no closing \"---\" line")
		}
		head = append(append(head, line...), '\n')
		rest = next
	}
	raw, err := FrontMatterYAML("SKILL.md", head)
	if err != nil {
		return fm, Invalid(SkillFileName, "%v", err)
	}
	str := func(k string) (string, *Error) {
		v, ok := raw[k]
		if !ok {
			return "", E(CodeRequired, SkillFileName+": "+k, "SKILL.md's front matter has no %s", k)
		}
		s, ok := v.(string)
		if !ok {
			return "", Invalid(SkillFileName+": "+k, "SKILL.md's front matter %s must be a string", k)
		}
		return strings.TrimSpace(s), nil
	}
	var e *Error
	if fm.Name, e = str("name"); e != nil {
		return fm, e
	}
	if !skillNameRE.MatchString(fm.Name) {
		return fm, Invalid(SkillFileName+": name", "skill name %q: 1-64 lowercase letters, digits and hyphens, starting and ending with a letter or digit", fm.Name)
	}
	if fm.Description, e = str("description"); e != nil {
		return fm, e
	}
	if fm.Description == "" || utf8.RuneCountInString(fm.Description) > maxSkillDescription {
		return fm, Invalid(SkillFileName+": description", "the description must say in 1 to %d characters what the skill does and when to use it", maxSkillDescription)
	}
	return fm, nil
}

// FrontMatterYAML reads the YAML between a file's "---" lines (SKILL.md's, a learned note's),
// strictly: a key given twice is refused, as in every YAML and JSON body (the last would win).
// what names the file in the error ("SKILL.md", "the note").
func FrontMatterYAML(what string, head []byte) (map[string]any, error) {
	var raw map[string]any
	if err := yaml.UnmarshalStrict(head, &raw); err != nil {
		return nil, fmt.Errorf("%s's front matter is not YAML: %v", what, err)
	}
	return raw, nil
}

func cutLine(b []byte, want string) ([]byte, bool) {
	line, rest, _ := bytes.Cut(b, []byte("\n"))
	return rest, strings.TrimRight(string(line), "\r \t") == want
}

// DefaultAndValidateSkill checks a skill as a client sent it (its files, SKILL.md's front
// matter, the size) and fills in its name, description and digest; the store assigns the
// version. The files are sorted by path.
func DefaultAndValidateSkill(s *Skill) error {
	var errs ErrorList
	errs.AddErr(checkTypeMeta(&s.TypeMeta, "Skill"))
	if s.Spec.Version != 0 {
		errs.Add(Invalid("spec.version", "the server numbers a skill's versions; leave version out"))
	}
	files := NewPath("spec", "files")
	before := len(errs)
	switch {
	case len(s.Spec.Files) == 0:
		errs.Add(E(CodeRequired, files.String(), "a skill needs its files, SKILL.md at least"))
	case len(s.Spec.Files) > maxSkillFiles:
		errs.Add(E(CodeTooLarge, files.String(), "a skill has at most %d files, got %d", maxSkillFiles, len(s.Spec.Files)))
	default:
		errs.AddErr(checkSkillFiles(s.Spec.Files, files))
	}
	if len(errs) > before {
		// SKILL.md and the digest are read from files that are all there and well formed.
		errs.AddErr(ValidLabels("metadata.labels", s.Metadata.Labels))
		return errs.Err()
	}
	md, ok := s.File(SkillFileName)
	if !ok {
		errs.Add(E(CodeRequired, files.String(), "a skill needs a SKILL.md at the top of its folder"))
	} else if fm, e := ParseSkillFrontMatter(md); e != nil {
		errs.Add(e)
	} else {
		if s.Metadata.Name == "" {
			s.Metadata.Name = fm.Name
		}
		if s.Metadata.Name != fm.Name {
			errs.Add(Invalid("metadata.name", "metadata.name %q differs from SKILL.md's name %q", s.Metadata.Name, fm.Name))
		}
		s.Spec.Description = fm.Description
	}
	errs.AddErr(ValidLabels("metadata.labels", s.Metadata.Labels))
	if len(errs) > 0 {
		return errs.Err()
	}
	sort.Slice(s.Spec.Files, func(i, j int) bool { return s.Spec.Files[i].Path < s.Spec.Files[j].Path })
	h := sha256.New()
	for _, f := range s.Spec.Files {
		// Length-prefixed, so no two different folders hash alike.
		b, _ := f.Bytes() // checked above
		h.Write([]byte(strconv.Itoa(len(f.Path)) + ":" + f.Path + strconv.Itoa(len(b)) + ":"))
		h.Write(b)
	}
	s.Spec.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return nil
}

// checkSkillFiles checks each file's path and content (at files) and the size of them all.
func checkSkillFiles(fs []SkillFile, files Path) error {
	var errs ErrorList
	total, seen := 0, map[string]bool{}
	for i, f := range fs {
		at := files.Index(i)
		field := at.Child("path").String()
		clean := path.Clean(f.Path)
		if f.Path == "" || clean != f.Path || path.IsAbs(f.Path) || clean == "." || strings.HasPrefix(clean, "../") || clean == ".." || strings.Contains(f.Path, "\\") {
			errs.Add(Invalid(field, "file path %q: want a clean path relative to the skill's folder", f.Path))
		} else if seen[f.Path] {
			errs.Add(Invalid(field, "file %q is given twice", f.Path))
		}
		seen[f.Path] = true
		b, err := f.Bytes()
		if err != nil {
			errs.Add(Invalid(at.Child("content").String(), "file %q: base64 content does not decode: %v", f.Path, err))
		}
		total += len(b)
	}
	if total > MaxSkillBytes {
		errs.Add(E(CodeTooLarge, files.String(), "the skill's files hold %d bytes; a skill is at most %d (1 MiB) in all", total, MaxSkillBytes))
	}
	return errs.Err()
}

// ParseSkillRef splits "name" or "name@version" (version 0: the latest).
func ParseSkillRef(ref string) (name string, version int, err *Error) {
	name, v, has := strings.Cut(ref, "@")
	if !skillNameRE.MatchString(name) {
		return "", 0, Invalid("", "skill %q: want NAME or NAME@VERSION, the name in lowercase letters, digits and hyphens", ref)
	}
	if !has {
		return name, 0, nil
	}
	n, perr := strconv.Atoi(v)
	if perr != nil || n < 1 || strconv.Itoa(n) != v {
		return "", 0, Invalid("", "skill %q: the version after @ is a whole number from 1", ref)
	}
	return name, n, nil
}
