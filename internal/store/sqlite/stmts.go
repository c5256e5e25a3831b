package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps the writer's statements prepared: SQLite otherwise parses every statement again
// on every call, which profiling showed as the largest share of the server's CPU on trivial runs.
// The writer pool has one connection, so each statement is prepared once.
type stmtCache struct {
	mu    sync.Mutex
	db    *sql.DB
	stmts map[string]*sql.Stmt
	// wanted are statements seen inside a transaction but not prepared yet. They are prepared
	// between transactions (prepareWanted): preparing inside one would wait for the writer's only
	// connection, which the transaction holds.
	wanted map[string]bool
}

// maxCached bounds the cache: queries built with a variable number of placeholders are not worth
// keeping forever.
const maxCached = 256

func (c *stmtCache) get(ctx context.Context, query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[query]; ok {
		return st
	}
	if len(c.stmts)+len(c.wanted) < maxCached {
		if c.wanted == nil {
			c.wanted = map[string]bool{}
		}
		c.wanted[query] = true
	}
	return nil
}

// prepareWanted prepares the statements seen since last time. Call it only outside a transaction.
func (c *stmtCache) prepareWanted(ctx context.Context) {
	c.mu.Lock()
	if len(c.wanted) == 0 {
		c.mu.Unlock()
		return
	}
	qs := make([]string, 0, len(c.wanted))
	for q := range c.wanted {
		qs = append(qs, q)
	}
	c.wanted = nil
	c.mu.Unlock()
	for _, q := range qs {
		st, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			continue // the plain call keeps working and reports its own errors
		}
		c.mu.Lock()
		if c.stmts == nil {
			c.stmts = map[string]*sql.Stmt{}
		}
		if _, dup := c.stmts[q]; dup {
			st.Close()
		} else {
			c.stmts[q] = st
		}
		c.mu.Unlock()
	}
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		st.Close()
	}
	c.stmts = nil
}

// txExec, txQueryRow and txQuery run a statement inside tx through the cache.
func (s *Store) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := s.stmts.get(ctx, query); st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := s.stmts.get(ctx, query); st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

func (s *Store) txQuery(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if st := s.stmts.get(ctx, query); st != nil {
		return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}
