package trigger

import (
	"context"
	"fmt"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// countMissed bounds how many missed slots a tick counts (an every-minute cron after a month
// down has 43,200): only the latest is fired or recorded; the count is reported.
const countMissed = 100

// Run fires schedules until ctx ends: each tick fires the slots that came due, then sleeps until
// the next slot (at most a few seconds, so new triggers are seen). Every server runs it: the
// store records each slot once.
func (c *Controller) Run(ctx context.Context) {
	for {
		next := c.Tick(ctx)
		d := maxTick
		if c.Every > 0 {
			d = c.Every
		}
		if !next.IsZero() {
			d = min(d, max(next.Sub(c.now()), 50*time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
	}
}

// Tick fires every schedule's slots due at c.Now() (read once for the tick) and returns the earliest slot still to come
// (zero if none). Errors are logged; the slot is tried again at the next tick.
func (c *Controller) Tick(ctx context.Context) time.Time {
	triggers, err := c.Store.ListTriggers(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.log().Warn("trigger scheduler: list triggers", "err", err)
		}
		return time.Time{}
	}
	// One instant for the whole tick: every schedule is looked at as of the same now, so a slot a
	// later trigger in the list fires was looked at for the earlier ones too (read per trigger, a
	// clock that moved in between made a tick fire one schedule's slot and not another's).
	now := c.now()
	var earliest time.Time
	for _, t := range triggers {
		if t.Spec.Schedule == nil {
			continue
		}
		next, err := c.tickOne(ctx, t, now)
		if err != nil {
			if ctx.Err() == nil {
				c.log().Warn("trigger scheduler", "trigger", t.Metadata.Name, "err", err)
			}
			continue
		}
		if !next.IsZero() && (earliest.IsZero() || next.Before(earliest)) {
			earliest = next
		}
	}
	return earliest
}

// tickOne fires one schedule's due slots. The slots due are those after the last one recorded
// (or the trigger's creation) up to now. The latest fires when it is on time (within
// LateAfter); when even the latest is late, no server was up for them, and spec.schedule.missed
// says: Skip records the latest as Missed, RunOnce fires it once. Earlier slots are never fired.
func (c *Controller) tickOne(ctx context.Context, t *api.Trigger, now time.Time) (time.Time, error) {
	sch, err := ParseSchedule(t.Spec.Schedule.Cron, t.Spec.Schedule.TimeZone)
	if err != nil {
		return time.Time{}, fmt.Errorf("schedule: %w", err)
	}
	cursor := time.Time{}
	if t.Metadata.CreationTimestamp != nil {
		cursor = *t.Metadata.CreationTimestamp
	}
	last, ok, err := c.Store.LastSlot(ctx, t.Metadata.Name)
	if err != nil {
		return time.Time{}, err
	}
	if ok && last.After(cursor) {
		cursor = last
	}
	slot, n := sch.Due(cursor, now, countMissed)
	if n > 0 {
		ev := Event{Source: api.FireSourceSchedule, Key: "slot:" + slot.UTC().Format(time.RFC3339), ScheduledTime: &slot,
			Data: ScheduleEvent(t.Metadata.Name, slot, sch.Location())}
		late := now.Sub(slot) > LateAfter
		switch {
		case late && t.Spec.Schedule.Missed == api.MissedRunOnce:
			if n > 1 {
				c.log().Info("trigger: slots missed while no server was up; running once (missed: RunOnce)", "trigger", t.Metadata.Name, "slots", n)
			}
		case late:
			ev.Outcome = api.FireMissed
			count := fmt.Sprint(n)
			if n > countMissed {
				count = fmt.Sprintf("more than %d", countMissed)
			}
			ev.Message = fmt.Sprintf("%s slot(s) up to this one passed while no server was up; missed: Skip left them", count)
		}
		if _, _, err := c.Fire(ctx, t, ev); err != nil {
			return time.Time{}, err
		}
	}
	return sch.Next(now), nil
}

// NextFire is when a trigger fires next on its schedule (nil: not a schedule, suspended, or never).
func NextFire(t *api.Trigger, now time.Time) *time.Time {
	if t.Spec.Schedule == nil || t.Spec.Suspend {
		return nil
	}
	sch, err := ParseSchedule(t.Spec.Schedule.Cron, t.Spec.Schedule.TimeZone)
	if err != nil {
		return nil
	}
	n := sch.Next(now)
	if n.IsZero() {
		return nil
	}
	n = n.UTC()
	return &n
}
