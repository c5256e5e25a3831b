package trigger

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // IANA zones without depending on the host's zoneinfo

	"github.com/robfig/cron/v3"
)

// Schedule is a standard five-field cron in a time zone. Its slots are wall-clock times in that
// zone: a slot whose wall time does not exist (the hour clocks skip) fires once, at the first
// instant after the gap; a wall time that happens twice (the hour clocks repeat) fires once, at
// its first occurrence.
type Schedule struct {
	spec *cron.SpecSchedule
	loc  *time.Location
}

// starBit is robfig/cron's mark of a field written "*" (its day matching depends on it).
const starBit = 1 << 63

// maxSearchDays bounds the search for the next slot (a cron such as "0 0 30 2 *" never matches).
const maxSearchDays = 5*366 + 2

// ParseSchedule parses a five-field cron (minute hour day-of-month month day-of-week, with the
// usual names and @daily-style shorthands) and an IANA time zone ("" is UTC). The errors name
// the field: cron or timeZone.
func ParseSchedule(expr, zone string) (*Schedule, error) {
	if zone == "" {
		zone = "UTC"
	}
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "Local" {
		return nil, &FieldError{Field: "timeZone", Msg: fmt.Sprintf("unknown time zone %q: want an IANA name such as Europe/Berlin", zone)}
	}
	e := strings.TrimSpace(expr)
	if e == "" {
		return nil, &FieldError{Field: "cron", Msg: "cron is required: five fields, minute hour day-of-month month day-of-week (\"0 9 * * MON\")"}
	}
	if strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ=") {
		return nil, &FieldError{Field: "cron", Msg: "give the time zone in timeZone, not in the cron"}
	}
	sch, err := cron.ParseStandard(e)
	if err != nil {
		return nil, &FieldError{Field: "cron", Msg: fmt.Sprintf("invalid cron %q: %v", expr, err)}
	}
	spec, ok := sch.(*cron.SpecSchedule)
	if !ok {
		return nil, &FieldError{Field: "cron", Msg: fmt.Sprintf("%q is an interval, not a calendar schedule: write five fields", expr)}
	}
	s := &Schedule{spec: spec, loc: loc}
	if s.Next(time.Now()).IsZero() {
		return nil, &FieldError{Field: "cron", Msg: fmt.Sprintf("cron %q never fires", expr)}
	}
	return s, nil
}

// Location is the schedule's time zone.
func (s *Schedule) Location() *time.Location { return s.loc }

// shiftBound is more than any daylight-saving shift: a wall time further than this from t's own
// cannot map to an instant on the other side of t, so it is skipped without resolving it.
const shiftBound = 3 * time.Hour

// Next returns the first slot strictly after t (zero if there is none within five years).
func (s *Schedule) Next(t time.Time) time.Time {
	w := t.In(s.loc)
	floor := wallOf(w).Add(-shiftBound)
	// Start a day early: a wall time before t's can map to an instant after t across a gap.
	y, m, d := w.Date()
	for i := 0; i < maxSearchDays; i++ {
		day := time.Date(y, m, d-1+i, 12, 0, 0, 0, s.loc)
		if !s.dayMatches(day) {
			continue
		}
		dy, dm, dd := day.Date()
		for h := 0; h < 24; h++ {
			if s.spec.Hour&(1<<uint(h)) == 0 {
				continue
			}
			for min := 0; min < 60; min++ {
				if s.spec.Minute&(1<<uint(min)) == 0 || time.Date(dy, dm, dd, h, min, 0, 0, time.UTC).Before(floor) {
					continue
				}
				if at := resolve(dy, dm, dd, h, min, s.loc); at.After(t) {
					return at
				}
			}
		}
	}
	return time.Time{}
}

// Prev returns the last slot at or before t (zero if there is none within five years).
func (s *Schedule) Prev(t time.Time) time.Time {
	w := t.In(s.loc)
	ceil := wallOf(w).Add(shiftBound)
	y, m, d := w.Date()
	for i := 0; i < maxSearchDays; i++ {
		day := time.Date(y, m, d+1-i, 12, 0, 0, 0, s.loc)
		if !s.dayMatches(day) {
			continue
		}
		dy, dm, dd := day.Date()
		for h := 23; h >= 0; h-- {
			if s.spec.Hour&(1<<uint(h)) == 0 {
				continue
			}
			for min := 59; min >= 0; min-- {
				if s.spec.Minute&(1<<uint(min)) == 0 || time.Date(dy, dm, dd, h, min, 0, 0, time.UTC).After(ceil) {
					continue
				}
				if at := resolve(dy, dm, dd, h, min, s.loc); !at.After(t) {
					return at
				}
			}
		}
	}
	return time.Time{}
}

// Due returns the latest slot in (after, until] and how many slots that span holds, counted up
// to limit (limit+1 means more than limit); zero and 0 when there is none.
func (s *Schedule) Due(after, until time.Time, limit int) (latest time.Time, n int) {
	latest = s.Prev(until)
	if latest.IsZero() || !latest.After(after) {
		return time.Time{}, 0
	}
	for t := s.Next(after); !t.IsZero() && !t.After(until) && n <= limit; t = s.Next(t) {
		n++
	}
	return latest, n
}

// Slots returns every slot in (after, until], in order (for tests and short spans).
func (s *Schedule) Slots(after, until time.Time) []time.Time {
	var out []time.Time
	for t := s.Next(after); !t.IsZero() && !t.After(until); t = s.Next(t) {
		out = append(out, t)
	}
	return out
}

func (s *Schedule) dayMatches(day time.Time) bool {
	if s.spec.Month&(1<<uint(day.Month())) == 0 {
		return false
	}
	dom := s.spec.Dom&(1<<uint(day.Day())) != 0
	dow := s.spec.Dow&(1<<uint(day.Weekday())) != 0
	if s.spec.Dom&starBit != 0 || s.spec.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// resolve maps a wall-clock time in loc to an instant: the time itself; across a gap (clocks
// skip it), the first instant after the gap; when it happens twice, its first occurrence.
func resolve(y int, m time.Month, d, h, min int, loc *time.Location) time.Time {
	wall := time.Date(y, m, d, h, min, 0, 0, time.UTC)
	t := time.Date(y, m, d, h, min, 0, 0, loc)
	start, end := t.ZoneBounds()
	if !wallOf(t).Equal(wall) { // no such wall time: Go moved it by an offset
		if !start.IsZero() && wallOf(start).After(wall) {
			return start
		}
		if !end.IsZero() {
			return end
		}
		return t
	}
	if !start.IsZero() {
		_, off := t.Zone()
		_, prevOff := start.Add(-time.Second).Zone()
		if prevOff > off { // the zone before ran ahead: the same wall time came first in it
			if c := t.Add(-time.Duration(prevOff-off) * time.Second); wallOf(c).Equal(wall) {
				return c
			}
		}
	}
	return t
}

// wallOf is t's wall clock in its own location, labelled UTC so wall times compare.
func wallOf(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
}

// FieldError is a validation error about one field, relative to its parent (cron, timeZone).
type FieldError struct {
	Field, Msg string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// asFieldError extracts a *FieldError.
func asFieldError(err error) (*FieldError, bool) {
	var fe *FieldError
	ok := errors.As(err, &fe)
	return fe, ok
}
