package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// Learning lists agent's learning folder (main's files with their ETags).
func (c *Client) Learning(ctx context.Context, agent string) (*LearningList, error) {
	var out LearningList
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: objectPath(Agents, agent, "learning")}, &out); err != nil {
		return nil, fmt.Errorf("learning of agent %q: %w", agent, err)
	}
	return &out, nil
}

// LearnedFile reads one file of main; a bare name is a note (notes/NAME.md).
func (c *Client) LearnedFile(ctx context.Context, agent, path string) (*LearnedFile, error) {
	var out LearnedFile
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: objectPath(Agents, agent, "learning", "files", escapePath(path))}, &out); err != nil {
		return nil, fmt.Errorf("learned %s of agent %q: %w", path, agent, err)
	}
	return &out, nil
}

// LearningLog lists the learning folder's commits, newest first.
func (c *Client) LearningLog(ctx context.Context, agent string) ([]LearningCommit, error) {
	var out struct {
		Items []LearningCommit `json:"items"`
	}
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: objectPath(Agents, agent, "learning", "log")}, &out); err != nil {
		return nil, fmt.Errorf("learning log of agent %q: %w", agent, err)
	}
	return out.Items, nil
}

// RetireLearned removes a file from main in a commit, if etag is still its ETag (else code
// PreconditionFailed).
func (c *Client) RetireLearned(ctx context.Context, agent, path, etag string) (*LearningChange, error) {
	var out LearningChange
	if _, _, err := c.call(ctx, request{method: http.MethodDelete, path: objectPath(Agents, agent, "learning", "files", escapePath(path)),
		header: http.Header{"If-Match": {`"` + etag + `"`}}}, &out); err != nil {
		return nil, fmt.Errorf("retire %s of agent %q: %w", path, agent, err)
	}
	return &out, nil
}

// RestoreLearned brings a file back into main as it was in commit from.
func (c *Client) RestoreLearned(ctx context.Context, agent, path, from string) (*LearningChange, error) {
	var out LearningChange
	body := map[string]string{"path": path, "from": from}
	if _, _, err := c.call(ctx, request{method: http.MethodPost, path: objectPath(Agents, agent, "learning", "restore"), body: body}, &out); err != nil {
		return nil, fmt.Errorf("restore %s of agent %q: %w", path, agent, err)
	}
	return &out, nil
}

// ExportLearning writes main as a git bundle to w.
func (c *Client) ExportLearning(ctx context.Context, agent string, w io.Writer) error {
	resp, err := c.do(ctx, request{method: http.MethodGet, path: objectPath(Agents, agent, "learning", "bundle"), header: http.Header{"Accept": {"*/*"}}})
	if err != nil {
		return fmt.Errorf("export learning of agent %q: %w", agent, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("export learning of agent %q: %w", agent, err)
	}
	return nil
}
