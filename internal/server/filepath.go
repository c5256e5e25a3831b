package server

import (
	"net/http"
	"strings"

	"agentrun.dev/agentrun/internal/api"
)

// checkRunPath refuses a run-folder path from a request that is absolute or has a "." or ".."
// segment (sent percent-encoded, so the mux did not clean it): cleaning it quietly would answer
// a different file than the one asked for.
func checkRunPath(p string) error {
	if strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return api.Errorf(http.StatusBadRequest, api.CodeInvalid, "path", "path %q must be relative to the run folder (no leading / or NUL)", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." {
			return api.Errorf(http.StatusBadRequest, api.CodeInvalid, "path", "path %q has a %q segment; paths are relative to the run folder, without . or ..", p, seg)
		}
	}
	return nil
}
