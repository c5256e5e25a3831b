package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// workspace is where sandboxes mount the run folder; absolute paths under it
// name files in the run folder.
const workspace = "/workspace"

// maxSymlinks bounds how many symbolic links one path may go through.
const maxSymlinks = 40

// agentError is a problem with what the agent asked for. It becomes a Result
// with IsError set rather than an error of Run.
type agentError struct{ msg string }

func (e *agentError) Error() string { return e.msg }

func agentErrorf(format string, args ...any) error {
	return &agentError{msg: fmt.Sprintf(format, args...)}
}

func escapes(display string) error {
	return agentErrorf("path %q escapes the run folder", display)
}

// openFolder opens the run folder as an os.Root, so that every operation
// below is checked by the kernel to stay inside it.
func openFolder(env Env) (*os.Root, error) {
	if env.Root == "" || !filepath.IsAbs(env.Root) {
		return nil, fmt.Errorf("tools: run folder %q is not an absolute path", env.Root)
	}
	root, err := os.OpenRoot(env.Root)
	if err != nil {
		return nil, fmt.Errorf("tools: open run folder: %w", err)
	}
	return root, nil
}

// cleanPath turns a path given by the agent into a clean slash-separated
// path relative to the run folder ("." for the folder itself). It refuses
// absolute paths (other than under /workspace/) and paths whose ".."
// components climb out of the folder.
func cleanPath(p string) (string, error) {
	if p == "" {
		return "", agentErrorf("path is empty; give a path relative to the run folder, or \".\" for the folder itself")
	}
	if strings.ContainsRune(p, 0) {
		return "", agentErrorf("path %q contains a NUL byte", p)
	}
	rel := p
	switch {
	case p == workspace:
		rel = "."
	case strings.HasPrefix(p, workspace+"/"):
		rel = strings.TrimLeft(p[len(workspace)+1:], "/")
		if rel == "" {
			rel = "."
		}
	case strings.HasPrefix(p, "/"):
		return "", agentErrorf("path %q is outside the run folder: use a path relative to the run folder (or under /workspace/)", p)
	}
	rel = path.Clean(rel)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", escapes(p)
	}
	return rel, nil
}

// resolve follows the symbolic links along rel inside the root and returns
// the path they lead to, with no symbolic link left among its existing
// components. A link that leads outside the run folder (absolute, or with
// ".." climbing out) makes the whole path refused, whether or not its
// target exists. Absolute link targets under /workspace/ are read as the
// sandbox sees them: inside the run folder. The root re-checks every
// operation on the result, so a link changed after this check cannot lead
// outside either.
func resolve(root *os.Root, display, rel string) (string, error) {
	if rel == "." {
		return ".", nil
	}
	pending := strings.Split(rel, "/")
	var done []string
	links := 0
	via := "" // the last link followed, for messages
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", agentErrorf("path %q escapes the run folder%s", display, via)
			}
			done = done[:len(done)-1]
			continue
		}
		cur := path.Join(path.Join(done...), c)
		fi, err := root.Lstat(cur)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				// Nothing further exists: the rest is read as written.
				rest := path.Join(append([]string{cur}, pending...)...)
				if rest == ".." || strings.HasPrefix(rest, "../") {
					return "", agentErrorf("path %q escapes the run folder%s", display, via)
				}
				return rest, nil
			}
			return "", pathErr(display, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			continue
		}
		links++
		if links > maxSymlinks {
			return "", agentErrorf("path %q: too many levels of symbolic links", display)
		}
		target, err := root.Readlink(cur)
		if err != nil {
			return "", pathErr(display, err)
		}
		target = filepath.ToSlash(target)
		if strings.HasPrefix(target, "/") {
			if target != workspace && !strings.HasPrefix(target, workspace+"/") {
				return "", agentErrorf("path %q escapes the run folder: symlink %q points to %q", display, cur, target)
			}
			done = nil
		}
		via = fmt.Sprintf(": symlink %q points to %q", cur, target)
		target = strings.TrimPrefix(target, workspace)
		pending = append(strings.Split(target, "/"), pending...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}

// isEscape reports whether err is the os.Root refusal of a path leading
// outside the root. os does not export that error, only its text.
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// pathErr turns the error of a file operation on the agent's path into an
// agentError when it is about what the agent asked for, and leaves host
// failures (I/O errors, a full disk) as they are.
func pathErr(display string, err error) error {
	var ae *agentError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return err
	case isEscape(err):
		return escapes(display)
	case errors.Is(err, fs.ErrNotExist):
		return agentErrorf("%q does not exist", display)
	case errors.Is(err, syscall.ENOTDIR):
		return agentErrorf("%q: a component of the path is not a directory", display)
	case errors.Is(err, syscall.EISDIR):
		return agentErrorf("%q is a directory", display)
	case errors.Is(err, fs.ErrExist):
		return agentErrorf("%q already exists", display)
	case errors.Is(err, fs.ErrPermission):
		return agentErrorf("permission denied: %q", display)
	case errors.Is(err, syscall.ELOOP):
		return agentErrorf("%q: too many levels of symbolic links", display)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return agentErrorf("%q: name too long", display)
	}
	return err
}

// agentPath cleans and resolves a path given by the agent.
func agentPath(root *os.Root, p string) (string, error) {
	rel, err := cleanPath(p)
	if err != nil {
		return "", err
	}
	return resolve(root, p, rel)
}

// ReadInFolder reads the file at rel (relative to the run folder) for the agent loop, which
// shows a tool result's pictures to the model; like the tools, it never reads outside the folder.
func ReadInFolder(folder, rel string) ([]byte, error) {
	root, err := os.OpenRoot(folder)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.ReadFile(rel)
}
