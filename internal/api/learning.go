package api

// The learning folder's API shapes (internal/learning holds the folder itself; internal/server
// serves these; the console shows them).

// LearnedItem is one file of a learning agent's main: a note (with its front matter), a skill's
// file or a workflow.
type LearnedItem struct {
	Kind        string `json:"kind"`
	Path        string `json:"path"`
	ETag        string `json:"etag"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Type        string `json:"type,omitempty"`
}

// LearningList is GET /v2/agents/{name}/learning.
type LearningList struct {
	Agent string        `json:"agent"`
	Main  string        `json:"main"`
	Items []LearnedItem `json:"items"`
}

// LearningChange is the answer of a retire or a restore: the commit it made.
type LearningChange struct {
	Commit string `json:"commit"`
	Path   string `json:"path"`
}
