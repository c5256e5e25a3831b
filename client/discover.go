package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const noServerMessage = "no agentrun server found: start one with `agentrun serve`, or set AGENTRUN_URL"

// ErrNoServer is returned by Discover when no server URL is configured or recorded.
var ErrNoServer = errors.New(noServerMessage)

// ServerInfo is the data folder's server.json, written by a running `agentrun serve`.
type ServerInfo struct {
	URL string `json:"url"`
	PID int    `json:"pid"`
}

// DataDir returns the data folder: AGENTRUN_HOME, else ~/.agentrun.
func DataDir() (string, error) {
	if d := os.Getenv("AGENTRUN_HOME"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the data folder: %w (set AGENTRUN_HOME)", err)
	}
	return filepath.Join(home, ".agentrun"), nil
}

func readServerFile(path string) (ServerInfo, error) {
	var info ServerInfo
	b, err := os.ReadFile(path)
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("%s: %w", path, err)
	}
	return info, nil
}

// Discover finds the server the way the CLI does. The URL is AGENTRUN_URL, else the url in the data
// folder's server.json; the token is AGENTRUN_TOKEN, else the data folder's token file (trimmed).
// When neither gives a URL it returns ErrNoServer.
func Discover() (*Client, error) {
	return DiscoverWith("", "")
}

// DiscoverWith is Discover with explicit overrides: a non-empty serverURL wins over AGENTRUN_URL and
// server.json, a non-empty token over AGENTRUN_TOKEN and the token file.
func DiscoverWith(serverURL, token string) (*Client, error) {
	dir, dirErr := DataDir()
	c := &Client{}
	switch {
	case serverURL != "":
		c.baseURL = normalizeURL(serverURL)
	case os.Getenv("AGENTRUN_URL") != "":
		c.baseURL = normalizeURL(os.Getenv("AGENTRUN_URL"))
	default:
		if dirErr != nil {
			return nil, fmt.Errorf("%s (%v)", noServerMessage, dirErr)
		}
		file := filepath.Join(dir, "server.json")
		info, err := readServerFile(file)
		if errors.Is(err, os.ErrNotExist) {
			return nil, ErrNoServer
		}
		if err != nil {
			return nil, fmt.Errorf("%w (reading %v)", ErrNoServer, err)
		}
		if strings.TrimSpace(info.URL) == "" {
			return nil, fmt.Errorf("%w (%s has no url)", ErrNoServer, file)
		}
		c.baseURL = normalizeURL(info.URL)
		c.serverFile = file
	}
	switch {
	case token != "":
		c.token = strings.TrimSpace(token)
	case os.Getenv("AGENTRUN_TOKEN") != "":
		c.token = strings.TrimSpace(os.Getenv("AGENTRUN_TOKEN"))
	case dirErr == nil && hasSession(dir, c.baseURL, c.serverFile != ""):
		// A person signed in with `agentrun login`: act as them.
		c.token, _ = sessionFor(dir, c.baseURL, c.serverFile != "")
	case dirErr == nil:
		b, err := os.ReadFile(filepath.Join(dir, "token"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("read the API token: %w", err)
		}
		c.token = strings.TrimSpace(string(b))
	}
	return c, nil
}

func hasSession(dir, baseURL string, local bool) bool {
	_, ok := sessionFor(dir, baseURL, local)
	return ok
}
