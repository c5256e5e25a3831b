package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// claimSQL leases up to $3 runs to $1 for $2 microseconds, in one statement. The candidates are
// unleased runs whose claimable time has come and leased runs whose lease has run out (by the
// database clock), oldest first, locked with FOR UPDATE SKIP LOCKED so concurrent claimers skip
// each other's picks instead of waiting or double-claiming. (A row changed by a claimer that
// committed meanwhile is re-checked against the WHERE clause before it is locked.) The pick is an
// ARRAY(...) sub-select, an InitPlan that runs exactly once, so the LIMIT and the locks apply to
// exactly the rows updated. The candidates come from two sub-selects, each walking its partial
// index (runs_claimable, runs_leased) rather than the whole table (finished runs included); they
// take four times the batch so that claimers skipping each other's locks still fill theirs.
const claimSQL = `
UPDATE runs SET lease_owner = $1,
	lease_expires_at = now() + $2::bigint * interval '1 microsecond',
	lease_generation = lease_generation + 1
WHERE name = ANY (ARRAY(
	SELECT name FROM runs
	WHERE name = ANY (ARRAY(
		(SELECT name FROM runs
		 WHERE lease_owner IS NULL AND claimable_at IS NOT NULL AND claimable_at <= now() AND admitted
		 ORDER BY claimable_at LIMIT 4 * $3)
		UNION ALL
		(SELECT name FROM runs
		 WHERE lease_owner IS NOT NULL AND lease_expires_at < now()
		 ORDER BY lease_expires_at LIMIT 4 * $3)))
	  AND ((lease_owner IS NULL AND claimable_at <= now() AND admitted)
	    OR (lease_owner IS NOT NULL AND lease_expires_at < now()))
	ORDER BY COALESCE(lease_expires_at, claimable_at), name
	LIMIT $3
	FOR UPDATE SKIP LOCKED))
RETURNING name, lease_generation, poke_seq, lease_expires_at`

// ClaimSQL is the claim statement ($1 owner, $2 lease in microseconds, $3 batch), for the
// benchmark's EXPLAIN, so it always shows the query the store runs.
const ClaimSQL = claimSQL

// ClaimRuns leases up to max claimable runs to owner for ttl.
func (s *Store) ClaimRuns(ctx context.Context, owner string, max int, ttl time.Duration) ([]store.Lease, error) {
	if max <= 0 {
		return nil, nil
	}
	var out []store.Lease
	err := s.ctlTx(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, claimSQL, owner, micros(ttl), max)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			l := store.Lease{Owner: owner}
			if err := rows.Scan(&l.Run, &l.Generation, &l.PokeSeq, &l.ExpiresAt); err != nil {
				return err
			}
			l.ExpiresAt = utc(l.ExpiresAt)
			out = append(out, l)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("claim runs for %s: %w", owner, err)
	}
	return out, nil
}

// ExpireLeases ends every lease held by owner so its runs are claimable at once.
func (s *Store) ExpireLeases(ctx context.Context, owner string) (int, error) {
	var n int64
	err := s.ctlTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET lease_expires_at = now() - interval '1 millisecond' WHERE lease_owner = $1`, owner)
		if err != nil {
			return err
		}
		if n = tag.RowsAffected(); n > 0 {
			return notifyWork(ctx, tx, "")
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("expire leases of %s: %w", owner, err)
	}
	if n > 0 {
		s.wake.Poke()
	}
	return int(n), nil
}

// renewChunk bounds the leases one renewal statement extends (one transaction each): it holds
// its runs' rows until it commits, and a commit of one of those runs waits for it.
const renewChunk = 1000

// renewSQL extends the leases ($1 runs, $2 owners, $3 generations) still held by $4
// microseconds from now and returns the runs and generations renewed. Its rows are locked in
// name order first (a SELECT ... ORDER BY name FOR UPDATE the UPDATE joins), as group commits
// lock them, so the two never deadlock; with SKIP LOCKED (renewSkipSQL) rows another transaction
// holds are left for a later pass instead of waited for.
const renewSQL = `
WITH k AS (
	SELECT r.name FROM runs r
	JOIN unnest($1::text[], $2::text[], $3::bigint[]) AS l (name, owner, gen)
		ON r.name = l.name AND r.lease_owner = l.owner AND r.lease_generation = l.gen
	ORDER BY r.name
	FOR UPDATE OF r%s)
UPDATE runs SET lease_expires_at = now() + $4::bigint * interval '1 microsecond'
FROM k WHERE runs.name = k.name
RETURNING runs.name, runs.lease_generation`

var (
	renewWaitSQL = fmt.Sprintf(renewSQL, "")
	renewSkipSQL = fmt.Sprintf(renewSQL, " SKIP LOCKED")
)

// renewPasses is how many passes skip the rows a commit in flight holds before the last pass
// waits for them.
const renewPasses = 4

// staleSQL returns which of the leases ($1 runs, $2 owners, $3 generations) the runs' rows, as
// last committed, no longer hold. It locks nothing, so a row a transaction holds locked still
// answers; a generation only grows, so a lease found stale can never be held again.
const staleSQL = `
SELECT l.name, l.gen FROM unnest($1::text[], $2::text[], $3::bigint[]) AS l (name, owner, gen)
LEFT JOIN runs r ON r.name = l.name
WHERE r.name IS NULL OR r.lease_owner IS DISTINCT FROM l.owner OR r.lease_generation <> l.gen`

// RenewLeases extends the given leases by ttl from now (database clock) and returns those it
// extended and those no longer held: one statement per renewChunk leases, in the order given (a
// runner holding 10,000 runs renewed them with 10,000 updates, slower than the runner's 5 s bound
// on a loaded machine, and then self-fenced them all). The first passes skip rows locked by the
// runs' own commits in flight (waiting for each in turn, a renewal of thousands of busy runs
// outlasted that bound too) and take them 10 ms later; then the leases left that are stale are
// lost at once, without waiting for their rows; the last pass waits for what is left. Cut short,
// it reports the chunks that committed before.
func (s *Store) RenewLeases(ctx context.Context, leases []store.Lease, ttl time.Duration) (renewed, lost []store.Lease, err error) {
	type held struct {
		run string
		gen int64
	}
	done := map[held]bool{}  // extended
	stale := map[held]bool{} // no longer held
	// each runs q over the leases a chunk at a time, marking the rows it returns in m.
	each := func(q string, ls []store.Lease, m map[held]bool, args ...any) error {
		for start := 0; start < len(ls); start += renewChunk {
			chunk := ls[start:min(start+renewChunk, len(ls))]
			names, owners, gens := make([]string, len(chunk)), make([]string, len(chunk)), make([]int64, len(chunk))
			for i, l := range chunk {
				names[i], owners[i], gens[i] = l.Run, l.Owner, l.Generation
			}
			var got []held
			err := pipeOn(ctx, s.ctlPool, func(b *pgx.Batch) {
				got = got[:0]
				b.Queue(q, append([]any{names, owners, gens}, args...)...).Query(func(rows pgx.Rows) error {
					for rows.Next() {
						var h held
						if err := rows.Scan(&h.run, &h.gen); err != nil {
							return err
						}
						got = append(got, h)
					}
					return rows.Err()
				})
			})
			if err != nil {
				return err
			}
			for _, h := range got {
				m[h] = true
			}
		}
		return nil
	}
	// left returns the leases neither extended nor known lost.
	left := func() []store.Lease {
		var out []store.Lease
		for _, l := range leases {
			if h := (held{l.Run, l.Generation}); !done[h] && !stale[h] {
				out = append(out, l)
			}
		}
		return out
	}
	// result splits the leases by outcome; those in neither list are unknown.
	result := func(err error) ([]store.Lease, []store.Lease, error) {
		renewed, lost = nil, nil
		for _, l := range leases {
			switch h := (held{l.Run, l.Generation}); {
			case done[h]:
				renewed = append(renewed, l)
			case stale[h]:
				lost = append(lost, l)
			}
		}
		if err != nil {
			err = fmt.Errorf("renew %d leases (%d renewed, %d lost before): %w", len(leases), len(renewed), len(lost), err)
		}
		return renewed, lost, err
	}
	todo := leases
	for pass := 1; pass <= renewPasses && len(todo) > 0; pass++ {
		if pass > 1 {
			t := time.NewTimer(10 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return result(ctx.Err())
			case <-t.C:
			}
		}
		if err := each(renewSkipSQL, todo, done, micros(ttl)); err != nil {
			return result(err)
		}
		todo = left()
	}
	if len(todo) == 0 {
		return result(nil)
	}
	// What is still locked may be locked for longer than the caller can wait; a lease taken by
	// another runner is said to be lost now rather than after that wait.
	if err := each(staleSQL, todo, stale); err != nil {
		return result(err)
	}
	if todo = left(); len(todo) > 0 {
		if err := each(renewWaitSQL, todo, done, micros(ttl)); err != nil {
			return result(err)
		}
		// Not extended after waiting for its row: no longer held.
		for _, l := range left() {
			stale[held{l.Run, l.Generation}] = true
		}
	}
	return result(nil)
}

// Commit applies w under the lease, atomically, or returns ErrFenced and applies nothing.
//
// The write joins the store's group commit (group.go): it is sent with the other commits waiting
// at that moment as one pipelined batch, run by PostgreSQL as one implicit transaction (no BEGIN:
// the statements before the batch's Sync commit together, or not at all if one fails), and the
// caller is answered only after that commit returned. The write's first statement takes its
// fence: it updates (or, when there is nothing to update, locks) the run row only if owner and
// generation still match, and every later statement of the write is conditioned on that match,
// so a stale lease applies nothing of this write and leaves its neighbours in the batch alone.
// The row lock is held to the end of the transaction, so the fence cannot change under the
// write, and it serializes the run's sequence counters: event seqs come from next_event as that
// statement advanced it, a new step's seq follows the run's last step. A check that fails (a
// Completed step must have a row) aborts the transaction; the batch is then committed again one
// write at a time, so only the write that failed it fails.
func (s *Store) Commit(ctx context.Context, l store.Lease, w store.Write) (store.Signals, error) {
	req := &commitReq{ctx: ctx, l: l, w: w, fencedWrite: true}
	if err := s.submit(ctx, req); err != nil {
		req.err = err
		return req.sig, commitError(req)
	}
	return req.sig, nil
}

// commitError is a fenced write's outcome as Commit reports it (nil when it committed).
func commitError(req *commitReq) error {
	err := req.err
	if err == nil {
		return nil
	}
	if isCode(err, errFencedCode) {
		err = store.ErrFenced
	}
	return fmt.Errorf("commit run %s (generation %d): %w", req.l.Run, req.l.Generation, err)
}

// queueFence queues the statement that takes a commit's fence (see Commit): it advances the
// run's event counter (and its step counter for the steps started), writes the status and ends the
// lease (release), if the write has any of these, or else only locks the row; inserts the
// write's events numbered after the run's events before the commit, records steps (stepWrites)
// started or ended, writes the run folder's changes (w.Files), and hands the run's signals and
// phase (after the write) to got, or calls fenced when the lease is no longer held (then it
// writes nothing). It always returns one row, so a stale lease is an answer, not an error that
// would abort the other writes of the batch. The events, the steps, the files and the release
// ride in this statement (each a data-modifying WITH joined to the fenced row r, which runs once
// whether or not the SELECT reads it) rather than in statements of their own: a trivial run's
// seven commits are seven statements. release is set only when no statement of the write comes
// after this one (those are conditioned on the lease, which this one ends).
func queueFence(b *pgx.Batch, l store.Lease, w store.Write, steps []stepWrite, release bool, got func(cancel bool, poke int64, phase string), fenced func()) {
	var q string
	args := []any{l.Run, l.Owner, l.Generation}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	// Each step started takes the run's next step number, advanced here under the row lock (so
	// it is the number as of this transaction, not the statement's snapshot) by the number of
	// steps the write records for the first time. With more than one, which of them are new is
	// read once, in the item n before r (their keys in order, ord and fresh).
	var inserted []string
	var lone api.Step // the step inserted, when there is one
	for _, sw := range steps {
		if sw.insert {
			inserted = append(inserted, sw.st.Key)
			lone = sw.st
		}
	}
	starts := len(inserted) > 0
	var fresh string // the number of steps inserted that take a new number
	var first string // the WITH items before r
	returning := `cancel_requested, poke_seq, phase`
	switch {
	case w.Status != nil || len(w.Events) > 0 || starts || release:
		set := `next_event = next_event + $4`
		args = append(args, len(w.Events))
		phase := `phase` // the phase the release sees: the one this write sets
		if w.Status != nil {
			phase = arg(w.Status.Phase)
			set += `, status = ` + arg(mustJSON(w.Status)) + `, phase = ` + phase + `, resource_version = resource_version + 1`
		}
		switch {
		case len(inserted) == 1:
			fresh = newStep(lone, arg)
		case len(inserted) > 1:
			first = `n AS (SELECT k.ord, NOT EXISTS (SELECT FROM steps WHERE run = $1 AND key = k.key) AS fresh
				FROM unnest(` + arg(inserted) + `::text[]) WITH ORDINALITY AS k (key, ord)), `
			fresh = `(SELECT count(*) FROM n WHERE n.fresh)`
		}
		if starts {
			set += `, next_step = next_step + ` + fresh
		}
		if release {
			var wake any
			if w.WakeAt != nil {
				wake = *w.WakeAt
			}
			set += `, ` + releaseSet(phase, arg(l.PokeSeq), arg(wake))
			returning += `, claimable_at`
		}
		q = `UPDATE runs SET ` + set + `
			WHERE name = $1 AND lease_owner = $2 AND lease_generation = $3 RETURNING ` + returning + `, next_event, next_step`
	default:
		q = `SELECT ` + returning + ` FROM runs
			WHERE name = $1 AND lease_owner = $2 AND lease_generation = $3 FOR UPDATE`
	}
	// Built in one buffer: a turn's statement has a dozen items, and joining them one by one
	// copied the statement a dozen times.
	var with strings.Builder
	with.Grow(len(q) + 1024 + 1024*len(steps)) // about what a step's item and the rest take
	with.WriteString(`WITH `)
	with.WriteString(first)
	with.WriteString(`r AS (`)
	with.WriteString(q)
	with.WriteString(`)`)
	if len(w.Events) > 0 {
		times, types, keys, msgs, data := eventArrays(w.Events)
		with.WriteString(`, e AS (INSERT INTO run_events (run, seq, time, type, step_key, message, data)
			SELECT $1, r.next_event - $4 + e.ord, COALESCE(e.time, now()), e.type, e.step_key, e.message, e.data::json
			FROM r, unnest(` + arg(times) + `::timestamptz[], ` + arg(types) + `::text[], ` + arg(keys) + `::text[], ` + arg(msgs) + `::text[], ` + arg(data) + `::text[])
				WITH ORDINALITY AS e (time, type, step_key, message, data, ord))`)
	}
	// A step inserted is numbered r.next_step less the new steps inserted after it in this
	// write; each is its own data-modifying WITH item (they see the statement's snapshot, not
	// each other's rows: stepWrites leaves a key only once).
	var checks []string
	histSeq := "" // the seq of the step that tags the files, when this statement inserts it
	hist := w.HistoryStep()
	ord := 0
	for i, sw := range steps {
		if sw.insert {
			ord++
			seq := "SELECT r.next_step FROM r"
			if ord < len(inserted) {
				seq = "SELECT r.next_step - (SELECT count(*) FROM n WHERE n.fresh AND n.ord > " + strconv.Itoa(ord) + ") FROM r"
			}
			if sw.st.Key == hist {
				histSeq = seq
			}
			with.WriteString(`, `)
			with.WriteString(stepStart(sw.st, fmt.Sprintf("s%d", i), seq, arg))
			continue
		}
		u, c := stepEnd(l.Run, sw.st, fmt.Sprintf("u%d", i), arg)
		with.WriteString(`, `)
		with.WriteString(u)
		checks = append(checks, c)
	}
	check := "NULL::boolean"
	if len(checks) > 0 {
		check = "COALESCE(" + strings.Join(checks, ", ") + ", NULL::boolean)"
	}
	with.WriteString(fileItems(w.Files, hist, histSeq, arg))
	notify := `NULL::bigint`
	if release {
		// The run's reservations go with the lease; other stores are told only if the run is
		// claimable now.
		with.WriteString(`, cr AS (DELETE FROM credit_reservations WHERE run = $1 AND EXISTS (SELECT FROM r))`)
		notify = `(SELECT count(pg_notify(` + arg(chanWork) + `, $1)) FROM r WHERE r.claimable_at <= now())`
	}
	with.WriteString(`
		SELECT r.cancel_requested, r.poke_seq, r.phase, ` + check + `, ` + notify + `
		FROM (VALUES (1)) AS one (x) LEFT JOIN r ON true`)
	b.Queue(with.String(), args...).QueryRow(func(row pgx.Row) error {
		var cancel *bool
		var poke *int64
		var phase *string
		var checked *bool
		var notified *int64
		if err := row.Scan(&cancel, &poke, &phase, &checked, &notified); err != nil {
			return err
		}
		if phase == nil {
			fenced()
			return nil
		}
		got(*cancel, *poke, *phase)
		return nil
	})
}

// releaseSet is the SET list that ends a lease: the run is claimable at once if poked after the
// claim (poke: the claim's poke_seq; something arrived the holder may not have seen), at wake
// otherwise, never again once finished (phase: the run's phase after the write).
func releaseSet(phase, poke, wake string) string {
	return `lease_owner = NULL, lease_expires_at = NULL,
		claimable_at = CASE WHEN ` + phase + ` IN ` + finishedPhases + ` THEN NULL
			WHEN poke_seq <> ` + poke + ` THEN now() ELSE ` + wake + `::timestamptz END`
}

// queueRelease queues the end of the lease, under the fence, for a write with statements after
// its fence statement (which otherwise ends the lease itself): the run's reservations go, and the
// run is claimable at once if poked after the claim (something arrived the holder may not have
// seen), at wake otherwise, never again once finished. Other stores are told only if the run is
// claimable now.
func queueRelease(b *pgx.Batch, l store.Lease, wakeAt *time.Time) {
	b.Queue(`DELETE FROM credit_reservations WHERE run = $1 AND `+fenceCond(2, 3), l.Run, l.Owner, l.Generation)
	var wake any
	if wakeAt != nil {
		wake = *wakeAt
	}
	b.Queue(`
		WITH r AS (
			UPDATE runs SET `+releaseSet("phase", "$2", "$3")+`
			WHERE name = $1 AND lease_owner = $5 AND lease_generation = $6 RETURNING claimable_at)
		SELECT pg_notify($4, $1) FROM r WHERE claimable_at <= now()`,
		l.Run, l.PokeSeq, wake, chanWork, l.Owner, l.Generation)
}

// eventArrays are the columns of events as arrays, for unnest (a zero time is NULL: now()).
func eventArrays(evs []api.Event) (times []*time.Time, types, keys, msgs []string, data []*string) {
	times = make([]*time.Time, len(evs))
	types = make([]string, len(evs))
	keys = make([]string, len(evs))
	msgs = make([]string, len(evs))
	data = make([]*string, len(evs))
	for i, ev := range evs {
		if !ev.Time.IsZero() {
			t := ev.Time
			times[i] = &t
		}
		types[i], keys[i], msgs[i] = pgText(string(ev.Type)), pgText(ev.StepKey), pgText(ev.Message)
		if len(ev.Data) > 0 {
			d := string(ev.Data)
			data[i] = &d
		}
	}
	return times, types, keys, msgs, data
}

// queueCharge queues the settlement of one charge, in one statement: the reservation of the
// charge's step is removed and, if there was one (credits were enforced when the call was
// reserved), the charge goes to the ledger and the account's totals, once per step.
func queueCharge(b *pgx.Batch, l store.Lease, c store.Charge) {
	b.Queue(`
		WITH d AS (DELETE FROM credit_reservations WHERE run = $1 AND step_key = $2 AND `+fenceCond(5, 6)+` RETURNING 1),
		l AS (INSERT INTO credits_ledger (time, kind, amount, run, run_uid, step_key, note)
			SELECT now(), 'charge', $3::bigint, $1, r.uid, $2, $4 FROM runs r WHERE r.name = $1 AND EXISTS (SELECT FROM d)
			ON CONFLICT DO NOTHING RETURNING amount)
		UPDATE credits_account SET charged = charged + COALESCE(l.amount, 0),
			unknown_charges = unknown_charges + CASE WHEN l.amount IS NULL THEN 1 ELSE 0 END
		FROM l WHERE id = 1`,
		l.Run, c.StepKey, c.Amount, pgText(c.Note), l.Owner, l.Generation)
}

// stepEnd is the WITH item (named name) that records st's end (Completed, Interrupted or
// Failed) on its row, joined to the fenced run row r of the statement (none when the lease is stale), and the
// expression (check) that aborts the commit when r matched and there was no row: the step was
// never started. arg adds a parameter and returns its placeholder; $1 is the run.
func stepEnd(run string, st api.Step, name string, arg func(any) string) (u, check string) {
	var completed any
	if st.CompletedAt != nil {
		completed = *st.CompletedAt
	}
	u = name + ` AS (UPDATE steps SET state = ` + arg(st.State) + `, result = ` + arg(nullJSON(st.Result)) + `::json, error = ` + arg(pgText(st.Error)) +
		`, cost_micros = ` + arg(st.CostMicros) + `::bigint, completed_at = ` + arg(completed) + `::timestamptz
		FROM r WHERE steps.run = $1 AND steps.key = ` + arg(st.Key) + ` RETURNING 1)`
	check = `CASE WHEN r.phase IS NOT NULL AND NOT EXISTS (SELECT FROM ` + name + `) THEN agentrun_raise('` + errStepCode + `', ` +
		arg(fmt.Sprintf("step %s of %s: %s before Started", st.Key, run, st.State)) + `) END`
	return u, check
}

// stepWrite is one row a commit writes to steps: insert (a step started, or started and ended in
// the same write) or update (the end of a step started before).
type stepWrite struct {
	st     api.Step
	insert bool
}

// stepWrites are a write's step records as its fence statement applies them. A step started and
// ended in the same write (a held read, a brief tool call: the journal records both at once) is
// one row inserted as it ends, not a row inserted then updated in the same transaction: the
// stored row is the same, with one statement less. ok is false when the write records a key
// more than once otherwise (the statement's WITH items would not see each other's rows): each
// record then has a statement of its own (queueStep), in order.
func stepWrites(steps []api.Step) (out []stepWrite, ok bool) {
	out = make([]stepWrite, 0, len(steps))
	for i := 0; i < len(steps); i++ {
		sw := stepWrite{st: steps[i], insert: steps[i].State == api.StepStarted}
		if sw.insert && i+1 < len(steps) && steps[i+1].Key == sw.st.Key && steps[i+1].State != api.StepStarted {
			end := steps[i+1]
			sw.st.State, sw.st.Result, sw.st.Error, sw.st.CostMicros, sw.st.CompletedAt = end.State, end.Result, end.Error, end.CostMicros, end.CompletedAt
			i++
		}
		// A write holds a few steps: a scan is cheaper than a map.
		if slices.ContainsFunc(out, func(o stepWrite) bool { return o.st.Key == sw.st.Key }) {
			return nil, false
		}
		out = append(out, sw)
	}
	return out, true
}

// newStep is 1 when step st is not recorded yet (its start takes a number) and 0 when it is
// being restarted (it keeps its number), so the run's steps stay numbered 1, 2, 3... The row is
// read in the statement's snapshot: a step of the run can only have been recorded by an earlier
// commit of the run, which ended before this one began (a run's commits are one at a time, and a
// new holder's come after the claim, which skips a row a commit in flight holds).
func newStep(st api.Step, arg func(any) string) string {
	return `CASE WHEN EXISTS (SELECT FROM steps WHERE run = $1 AND key = ` + arg(st.Key) + `) THEN 0 ELSE 1 END`
}

// stepStart is the data-modifying WITH item (named name) that records step st as started, or as
// st says it ended when it started in the same write (stepWrites): it inserts the step numbered
// by seq (a query returning the run's advanced next_step, which returns no row when the fence
// did not match, so nothing is inserted), or restarts a row already present, keeping its
// number. $1 is the run.
func stepStart(st api.Step, name, seq string, arg func(any) string) string {
	var completed any
	if st.CompletedAt != nil {
		completed = *st.CompletedAt
	}
	return name + ` AS (INSERT INTO steps (run, seq, key, kind, state, title, attempt, args_hash, args, result, error, cost_micros, started_at, completed_at)
		SELECT $1, (` + seq + `), ` + arg(st.Key) + `, ` + arg(st.Kind) + `, ` + arg(st.State) + `, ` + arg(pgText(st.Title)) + `, ` +
		arg(st.Attempt) + `::integer, ` + arg(st.ArgsHash) + `, ` + arg(nullJSON(st.Args)) + `::json, ` + arg(nullJSON(st.Result)) + `::json, ` +
		arg(pgText(st.Error)) + `, ` + arg(st.CostMicros) + `::bigint, ` + arg(st.StartedAt) + `::timestamptz, ` + arg(completed) + `::timestamptz
		WHERE EXISTS (` + seq + `)
		ON CONFLICT (run, key) DO UPDATE SET state = EXCLUDED.state, attempt = EXCLUDED.attempt, args_hash = EXCLUDED.args_hash,
			args = EXCLUDED.args, result = EXCLUDED.result, error = EXCLUDED.error, started_at = EXCLUDED.started_at,
			completed_at = EXCLUDED.completed_at, cost_micros = EXCLUDED.cost_micros, resolution = '', resolution_result = NULL)`
}

// queueStep queues the write of one journal row, for a write that records a step twice (see
// stepWrites; queueFence writes the others' steps). Started inserts the step numbered by the run's advanced next_step, or restarts a row
// already present (keeping its seq); Completed, Interrupted and Failed update the existing row
// and abort the commit if there is none.
func queueStep(b *pgx.Batch, l store.Lease, st api.Step) {
	run := l.Run
	args := []any{run, l.Owner, l.Generation}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if st.State == api.StepStarted {
		b.Queue(`WITH n AS (UPDATE runs SET next_step = next_step + `+newStep(st, arg)+`
			WHERE name = $1 AND lease_owner = $2 AND lease_generation = $3 RETURNING next_step), `+
			stepStart(st, "s", "SELECT next_step FROM n", arg)+` SELECT`, args...)
		return
	}
	u, check := stepEnd(run, st, "u", arg)
	b.Queue(`WITH r AS (SELECT phase FROM runs WHERE name = $1 AND lease_owner = $2 AND lease_generation = $3), `+u+`
		SELECT `+check+` FROM (VALUES (1)) AS one (x) LEFT JOIN r ON true`, args...)
}
