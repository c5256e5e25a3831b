package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// recordRuns records what the runs list asked for (the server's own is tested end to end in
// e2e/console): a cancel of a run that has finished fails, as the store's does.
type recordRuns struct {
	tc       *testConsole
	canceled []string
	rerun    []string
}

func (f *recordRuns) Cancel(ctx context.Context, run, user string) error {
	r, err := f.tc.st.GetRun(ctx, run)
	if err != nil {
		return err
	}
	if api.Finished(r.Status.Phase) {
		return fmt.Errorf("run %s has finished", run)
	}
	f.canceled = append(f.canceled, run+" by "+user)
	return nil
}

func (f *recordRuns) Rerun(ctx context.Context, run, user string) (*api.AgentRun, error) {
	old, err := f.tc.st.GetRun(ctx, run)
	if err != nil {
		return nil, err
	}
	name := run + "-again"
	nr := &api.AgentRun{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"}, Metadata: api.ObjectMeta{Name: name},
		Spec: api.AgentRunSpec{Agent: old.Spec.Agent, Input: old.Spec.Input}, Status: api.AgentRunStatus{Phase: api.PhaseQueued}}
	if err := f.tc.st.CreateRun(ctx, nr); err != nil {
		return nil, err
	}
	f.rerun = append(f.rerun, name)
	return nr, nil
}

// The runs list shows runsPerPage runs a page, newest first; its links to the next and previous
// pages keep the filters; a filter and a search narrow the list; a bulk action needs the page's
// CSRF token, acts on the runs ticked, and comes back to the same filters with a note.
func TestRunsListPagesFiltersBulk(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t)
	rec := &recordRuns{tc: tc}
	tc.Runs = rec
	for i := 0; i < 120; i++ {
		tc.createRun(t, fmt.Sprintf("run-%03d", i))
	}
	_, page := tc.body(t, "/runs")
	if !strings.Contains(page, `data-run="run-119"`) || strings.Contains(page, `data-run="run-069"`) || !strings.Contains(page, "Runs 1–50 of 120") {
		t.Errorf("page 1 of 120 runs is not the newest 50:\n%s", page)
	}
	_, page = tc.body(t, "/runs?page=3")
	if !strings.Contains(page, `data-run="run-019"`) || !strings.Contains(page, `data-run="run-000"`) || !strings.Contains(page, "Runs 101–120 of 120") || strings.Contains(page, `rel="next"`) {
		t.Errorf("page 3 of 120 runs is not the oldest 20:\n%s", page)
	}
	_, page = tc.body(t, "/runs?agent=a&page=2")
	if !strings.Contains(page, `data-run="run-069"`) || !strings.Contains(page, `data-run="run-020"`) || !strings.Contains(page, "Runs 51–100<") ||
		!strings.Contains(page, `href="/runs?agent=a&amp;page=3" rel="next"`) {
		t.Errorf("page 2 of agent a:\n%s", page)
	}
	if _, page = tc.body(t, "/runs?page=9"); !strings.Contains(page, "No runs on this page") {
		t.Errorf("a page past the last:\n%s", page)
	}
	_, page = tc.body(t, "/runs?agent=a&q=run-0&page=2")
	for _, want := range []string{`data-run="run-049"`, `data-run="run-000"`, "Runs 51–100 of 100",
		`href="/runs?agent=a&amp;q=run-0" rel="prev"`, `<input type="hidden" name="back" value="agent=a&amp;page=2&amp;q=run-0">`} {
		if !strings.Contains(page, want) {
			t.Errorf("page 2 of agent a, search run-0, lacks %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, `rel="next"`) || strings.Contains(page, `data-run="run-100"`) {
		t.Errorf("the last page of the search has a next page or a run that does not match:\n%s", page)
	}
	if _, page = tc.body(t, "/runs?phase=Failed"); !strings.Contains(page, "No runs match these filters") {
		t.Errorf("a filter matching nothing:\n%s", page)
	}

	// Without the token: refused, nothing done.
	form := url.Values{"action": {"cancel"}, "run": {"run-001", "run-002"}, "back": {"agent=a"}}
	if resp, _ := tc.post(t, "/runs/bulk", tc.session, "application/x-www-form-urlencoded", form.Encode()); resp.StatusCode != http.StatusForbidden || len(rec.canceled) != 0 {
		t.Errorf("a bulk cancel without the CSRF token: HTTP %d, cancelled %v", resp.StatusCode, rec.canceled)
	}
	form.Set("csrf", tc.csrf())
	resp, _ := tc.post(t, "/runs/bulk", tc.session, "application/x-www-form-urlencoded", form.Encode())
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "agent=a") || !strings.Contains(loc, "did=cancel") || len(rec.canceled) != 2 || rec.canceled[0] != "run-001 by admin" {
		t.Fatalf("bulk cancel: HTTP %d to %q, cancelled %v", resp.StatusCode, loc, rec.canceled)
	}
	if _, page = tc.body(t, loc); !strings.Contains(page, "Asked 2 runs to cancel.") {
		t.Errorf("the list after a bulk cancel says:\n%s", page)
	}
	form.Set("action", "rerun")
	form["run"] = []string{"run-005"}
	resp, _ = tc.post(t, "/runs/bulk", tc.session, "application/x-www-form-urlencoded", form.Encode())
	_, page = tc.body(t, resp.Header.Get("Location"))
	if len(rec.rerun) != 1 || !strings.Contains(page, "Started 1 new run.") || !strings.Contains(page, `<a href="/runs/run-005-again">run-005-again</a>`) {
		t.Errorf("bulk re-run: %v; the list says:\n%s", rec.rerun, page)
	}
	// A note names only runs that exist: a link cannot put a name of its own on the page.
	if _, page = tc.body(t, "/runs?did=rerun&done=1&new=made-up"); strings.Contains(page, "made-up") {
		t.Errorf("the note names a run that does not exist:\n%s", page)
	}
}

// Mission Control's cost: a day whose runs could not be priced is drawn as unknown (a dashed bar,
// "unknown" in its table), never as $0; a day with some unpriced is "at least"; the charts are
// <svg role="img"> named by what they show, each with a table.
func TestMissionCostCharts(t *testing.T) {
	now := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	at := func(days int) *time.Time { t := now.AddDate(0, 0, -days); return &t }
	run := func(name, agent, usd string, created *time.Time) *api.AgentRun {
		r := &api.AgentRun{Metadata: api.ObjectMeta{Name: name, CreationTimestamp: created}, Spec: api.AgentRunSpec{Agent: agent},
			Status: api.AgentRunStatus{Phase: api.PhaseSucceeded}}
		if usd != "" {
			r.Status.Cost = &api.RunCost{TotalUSD: usd}
		}
		return r
	}
	// The store lists oldest first.
	runs := []*api.AgentRun{
		run("old", "a", "5.00", at(20)),
		run("u1", "b", "unknown", at(3)),
		run("p1", "a", "0.50", at(1)), run("p2", "b", "at least 0.25", at(1)),
		run("t1", "a", "1.25", at(0)),
	}
	d := missionOf(runs, now)
	byLabel := map[string]Bar{}
	for _, b := range d.Days {
		byLabel[b.Label] = b
	}
	if b := byLabel["Nov 29"]; !b.Unknown || b.Text() != "unknown" {
		t.Errorf("a day of one unpriced run: %+v %q, want unknown", b, b.Text())
	}
	if b := byLabel["Dec 1"]; b.Unknown || !b.Partial || b.Text() != "at least $0.75" {
		t.Errorf("a day with some unpriced: %+v %q, want at least $0.75", b, b.Text())
	}
	if b := byLabel["Dec 2"]; b.Text() != "$1.25" || b.Count != 1 {
		t.Errorf("today: %+v %q", b, b.Text())
	}
	if b := byLabel["Nov 28"]; b.Text() != "$0.00" || b.Unknown || b.Count != 0 {
		t.Errorf("a day with no runs: %+v %q, want $0.00 (nothing ran)", b, b.Text())
	}
	if len(d.Days) != 14 || d.Days[0].Label != "Nov 19" {
		t.Errorf("days: %d from %s, want 14 from Nov 19", len(d.Days), d.Days[0].Label)
	}
	if len(d.PerAgent) != 2 || d.PerAgent[0].Label != "a" || d.PerAgent[0].Text() != "$1.75" || d.PerAgent[1].Text() != "at least $0.25" {
		t.Errorf("per agent: %+v", d.PerAgent)
	}
	svg := string(barChart("Cost per day, last 14 days", d.Days))
	for _, want := range []string{`<svg role="img" aria-labelledby="chart-cost-per-day-last-14-days-t"`, `<title id="chart-cost-per-day-last-14-days-t">Cost per day, last 14 days</title>`,
		`class="bar unknown"`, `class="bar partial"`, `<summary>Show as table</summary>`, `<td>Nov 29</td><td class="num">unknown</td>`, `<td>Dec 1</td><td class="num">at least $0.75</td>`} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %s:\n%s", want, svg)
		}
	}
	if strings.Contains(svg, `<td>Nov 29</td><td class="num">$0`) {
		t.Errorf("an unpriced day is drawn as $0:\n%s", svg)
	}
}

// The components: money says unknown (never $0) for a cost that is not known; a pill has an
// icon and its word; relative time carries the exact time.
func TestComponents(t *testing.T) {
	for in, want := range map[string]string{"": ">unknown<", "unknown": ">unknown<", "0.0421": ">$0.0421<", "at least 0.01": ">at least $0.01<"} {
		if got := string(money(in)); !strings.Contains(got, want) {
			t.Errorf("money(%q) = %s, want %s", in, got, want)
		}
	}
	if got := string(pill(api.PhaseWaiting, api.Reason("Approval"))); !strings.Contains(got, "tone-wait") || !strings.Contains(got, "<svg") || !strings.Contains(got, ">Waiting</span>") || !strings.Contains(got, "Approval") {
		t.Errorf("pill(Waiting, Approval) = %s", got)
	}
	ts := time.Now().Add(-5 * time.Minute)
	if got := string(reltime(&ts)); !strings.Contains(got, ">5m ago</time>") || !strings.Contains(got, `title="`+ts.UTC().Format("2006-01-02 15:04:05 UTC")+`"`) {
		t.Errorf("reltime = %s", got)
	}
}
