package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// serverToken is the API token: AGENTRUN_TOKEN when set (a platform such as Render generates it),
// written to the data folder's token file so the CLI beside the server finds it; else that file,
// made with a random token the first time (created reports it until tokenShown). A token from the
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
	// token.unshown marks a made token not printed yet: a first start that fails after making it
	// (its store not up yet, as in compose) leaves the printing to the next start.
	unshown := filepath.Join(dir, "token.unshown")
	if _, err := os.Stat(path); os.IsNotExist(err) {
		if err := os.WriteFile(unshown, nil, 0o600); err != nil {
			return "", false, false, fmt.Errorf("write %s: %w", unshown, err)
		}
	}
	token, err = readOrCreateSecret(path)
	if err != nil {
		return "", false, false, err
	}
	_, err = os.Stat(unshown)
	return token, err == nil, false, nil
}

// tokenShown records that the made token was printed.
func tokenShown(dir string) { os.Remove(filepath.Join(dir, "token.unshown")) }
