package tools

import (
	"agentrun.dev/agentrun/internal/catalog"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
)

const (
	maxGrepMatches = 500
	maxGrepLine    = 500     // bytes of a matching line shown
	maxGrepScan    = 1 << 20 // bytes of a line searched
)

type grepSearch struct {
	ctx     context.Context
	root    *os.Root
	re      *regexp.Regexp
	out     strings.Builder
	matches int
	full    bool // stopped at maxGrepMatches
}

var errGrepFull = errors.New("grep: enough matches")

func grepRun(ctx context.Context, root *os.Root, in *catalog.Grep) (string, error) {
	pattern := in.Pattern
	display := "."
	if in.Path != nil {
		display = *in.Path
	}
	glob, hasGlob := "", in.Glob != nil
	if hasGlob {
		glob = *in.Glob
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", agentErrorf("invalid pattern %q: %v", pattern, err)
	}
	if hasGlob {
		if strings.Contains(glob, "/") {
			return "", agentErrorf("glob %q contains \"/\"; it is matched against file names only (use path to choose a folder)", glob)
		}
		if _, err := path.Match(glob, ""); err != nil {
			return "", agentErrorf("invalid glob %q: %v", glob, err)
		}
	}
	p, err := agentPath(root, display)
	if err != nil {
		return "", err
	}
	fi, err := root.Lstat(p)
	if err != nil {
		return "", pathErr(display, err)
	}
	s := &grepSearch{ctx: ctx, root: root, re: re}
	switch {
	case fi.Mode().IsRegular():
		// A file named explicitly is searched whatever the glob says.
		err = s.file(p)
	case fi.IsDir():
		err = fs.WalkDir(root.FS(), p, func(name string, d fs.DirEntry, err error) error {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if err != nil {
				// An unreadable folder below the start is skipped, not fatal.
				if name != p && pathErr(name, err) != err {
					if d != nil && d.IsDir() {
						return fs.SkipDir
					}
					return nil
				}
				return pathErr(display, err)
			}
			switch {
			case d.IsDir():
				if d.Name() == ".git" && name != p {
					return fs.SkipDir
				}
				return nil
			case !d.Type().IsRegular(): // symbolic links, devices, pipes
				return nil
			}
			if hasGlob {
				if m, _ := path.Match(glob, d.Name()); !m {
					return nil
				}
			}
			return s.file(name)
		})
	default:
		return "", agentErrorf("%q is not a regular file or folder (%s)", display, fileKind(fi.Mode()))
	}
	if err != nil && !errors.Is(err, errGrepFull) {
		return "", err
	}
	if s.matches == 0 {
		msg := fmt.Sprintf("no matches for %q in %s", pattern, display)
		if hasGlob {
			msg += fmt.Sprintf(" (files matching %q)", glob)
		}
		return msg + "\n", nil
	}
	if s.full {
		fmt.Fprintf(&s.out, "[truncated: stopped at %d matches; narrow the pattern, path or glob]\n", maxGrepMatches)
	}
	return s.out.String(), nil
}

// file searches one regular file; name is relative to the root.
func (s *grepSearch) file(name string) error {
	f, err := s.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if pathErr(name, err) != err {
			return nil // vanished or unreadable: skip
		}
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	lr := newLineReader(f, maxGrepScan)
	head, err := lr.r.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil
	}
	if looksBinary(head) {
		return nil
	}
	for n := 1; ; n++ {
		if n%1024 == 0 {
			if err := s.ctx.Err(); err != nil {
				return err
			}
		}
		line, _, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("grep %s: %w", name, err)
		}
		if !s.re.Match(line) {
			continue
		}
		if s.matches == maxGrepMatches {
			s.full = true
			return errGrepFull
		}
		s.matches++
		s.out.WriteString(name)
		s.out.WriteByte(':')
		s.out.WriteString(strconv.Itoa(n))
		s.out.WriteByte(':')
		s.out.WriteString(shorten(line))
		s.out.WriteByte('\n')
	}
}

// shorten cuts a line to maxGrepLine bytes on a character boundary.
func shorten(line []byte) string {
	if len(line) <= maxGrepLine {
		return string(line)
	}
	cut := maxGrepLine
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return string(line[:cut]) + " [...]"
}
