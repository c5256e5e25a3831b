package store

import (
	"context"
	"fmt"
)

// Learning keeps each learning agent's git repository (docs/architecture.md, "Groups, triggers and
// learning"): its objects, content-addressed and never changed, and its one branch, main. A commit
// is written as the new objects and the move of main in one transaction, so main always names a
// whole commit.
type Learning interface {
	// LearningMain returns the commit main names for agent ("" when it has none yet).
	LearningMain(ctx context.Context, agent string) (string, error)
	// LearningObjects returns every stored object of agent's repository, in no set order.
	LearningObjects(ctx context.Context, agent string) ([]GitObject, error)
	// UpdateLearningMain stores objs (an object already stored is kept as is) and moves main
	// from old to new, both in one transaction. When main is not old any more (another commit
	// won), nothing is written and the error is ErrConflict.
	UpdateLearningMain(ctx context.Context, agent string, objs []GitObject, old, new string) error
}

// GitObject is one git object as git encodes it: its type (1 commit, 2 tree, 3 blob, 4 tag),
// its hash (hex SHA-1) and its content without the header.
type GitObject struct {
	Hash string
	Type int
	Data []byte
}

// CheckLearningMain is the rule UpdateLearningMain follows: main moves only from the commit the
// writer started from.
func CheckLearningMain(agent, current, old string) error {
	if current != old {
		return fmt.Errorf("learning main of %s is %q, not %q: %w", agent, current, old, ErrConflict)
	}
	return nil
}
