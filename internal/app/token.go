package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// serverToken is the API token: AGENTRUN_TOKEN when set (a platform such as Render generates it),
// written to the data folder's token file so the CLI beside the server finds it; else that file,
// made with a random token the first time (created reports that first time). A token from the
// environment also sets the console's first password (see auth.Accounts.AcceptSetupToken).
func serverToken(dir string) (token string, created, fromEnv bool, err error) {
	path := filepath.Join(dir, "token")
	if v := strings.TrimSpace(os.Getenv("AGENTRUN_TOKEN")); v != "" {
		if len(v) < 16 {
			return "", false, false, fmt.Errorf("AGENTRUN_TOKEN: want at least 16 characters (it is the API's bearer token), got %d", len(v))
		}
		if b, err := os.ReadFile(path); err != nil || strings.TrimSpace(string(b)) != v {
			if err := os.WriteFile(path, []byte(v+"\n"), 0o600); err != nil {
				return "", false, false, fmt.Errorf("write %s: %w", path, err)
			}
		}
		return v, false, true, nil
	}
	_, statErr := os.Stat(path)
	token, err = readOrCreateSecret(path)
	return token, err == nil && os.IsNotExist(statErr), false, err
}
