package client

import (
	"fmt"
	"strings"
)

// checkFilePath refuses a run-folder path that could name something outside the folder: an
// absolute path, or a "." or ".." segment (which an HTTP stack cleans into another API route:
// files/../../../agents/x would read an agent). The server refuses them too.
func checkFilePath(p string) error {
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("path %q is absolute: give it relative to the run folder", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." {
			return fmt.Errorf("path %q has a %q segment: give it relative to the run folder, without . or ..", p, seg)
		}
	}
	if strings.ContainsRune(p, 0) {
		return fmt.Errorf("path %q has a NUL byte", p)
	}
	return nil
}
