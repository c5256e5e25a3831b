package api

import "time"

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
	// Problem says why the path is not one the folder allows (a file stored before paths were
	// checked): runs are not offered it, and retiring it is how it goes.
	Problem string `json:"problem,omitempty"`
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

// LearnedFile is one file of main, whole (GET /v2/agents/{name}/learning/files/{path}).
type LearnedFile struct {
	Path    string `json:"path"`
	ETag    string `json:"etag"`
	Content string `json:"content"`
}

// LearningCommit is one commit of the learning folder.
type LearningCommit struct {
	Hash    string    `json:"hash"`
	Author  string    `json:"author"`
	When    time.Time `json:"when"`
	Message string    `json:"message"`
}

// LearningLog is GET /v2/agents/{name}/learning/log: main's commits, newest first.
type LearningLog struct {
	Items []LearningCommit `json:"items"`
}
