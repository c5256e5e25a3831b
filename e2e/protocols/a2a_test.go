package protocols

import (
	"slices"
	"strings"
	"testing"
)

type a2aTask struct {
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	State     string `json:"state"`
	Status    string `json:"status"`
	Artifacts []struct {
		ID   string `json:"id"`
		Text string `json:"text"`
	} `json:"artifacts"`
	History []string `json:"history"`
}

func (t a2aTask) answer() string {
	if len(t.Artifacts) == 0 {
		return ""
	}
	return t.Artifacts[0].Text
}

// listed is a ListTasks page as a2a.mjs prints it.
type listed struct {
	IDs       []string `json:"ids"`
	States    []string `json:"states"`
	Artifacts []int    `json:"artifacts"`
	History   []int    `json:"history"`
	Next      string   `json:"next"`
	PageSize  int      `json:"pageSize"`
	TotalSize int      `json:"totalSize"`
}

// TestA2AJSSDK: the official A2A JS SDK's client fetches an agent's card (only with the token),
// and over each binding the card names (JSON-RPC, HTTP+JSON) sends a message and gets the task
// completed with the answer as its artifact, streams a task's status and artifact updates, gets a
// task, answers an input-required task, cancels a task, and meets a task waiting for an approval
// as auth-required, naming where; and lists an agent's tasks newest first, page by page, by
// state, by context and by time, with bad paging refused.
func TestA2AJSSDK(t *testing.T) {
	t.Parallel()
	dir := client(t, "a2a-js")
	e := newServer(t)
	type binding struct {
		Protocol       string   `json:"protocol"`
		Sent           a2aTask  `json:"sent"`
		Streamed       []string `json:"streamed"`
		Got            a2aTask  `json:"got"`
		Missing        string   `json:"missing"`
		CancelFinished string   `json:"cancelFinished"`
		Asked          a2aTask  `json:"asked"`
		Answered       a2aTask  `json:"answered"`
		Cancelled      a2aTask  `json:"cancelled"`
		AfterCancel    string   `json:"afterCancel"`
		Approval       a2aTask  `json:"approval"`
	}
	var out struct {
		UnauthenticatedCard string `json:"unauthenticatedCard"`
		Card                struct {
			Name       string   `json:"name"`
			Version    string   `json:"version"`
			Streaming  bool     `json:"streaming"`
			Interfaces []string `json:"interfaces"`
			Security   []string `json:"security"`
			Skills     []string `json:"skills"`
		} `json:"card"`
		JSONRPC  binding `json:"JSONRPC"`
		HTTPJSON binding `json:"HTTP+JSON"`
		List     map[string]struct {
			All, Completed, Context, NoContext, Future listed
			Pages                                      []listed
			TooBig, BadToken                           string
		} `json:"list"`
	}
	runNode(t, e, dir, "a2a.mjs", &out)

	if !strings.Contains(out.UnauthenticatedCard, "401") {
		t.Errorf("the card without the token: %q, want a 401", out.UnauthenticatedCard)
	}
	c := out.Card
	base := e.URL + "/v2/a2a/hello-agent"
	if c.Name != "Hello" || !c.Streaming || !slices.Contains(c.Interfaces, "JSONRPC 1.0 "+base) || !slices.Contains(c.Interfaces, "HTTP+JSON 1.0 "+base) ||
		!slices.Equal(c.Security, []string{"bearer"}) || !slices.Equal(c.Skills, []string{"hello-agent"}) {
		t.Errorf("card: %+v", c)
	}
	for name, b := range map[string]binding{"JSONRPC": out.JSONRPC, "HTTP+JSON": out.HTTPJSON} {
		if b.Protocol != "1.0" {
			t.Errorf("%s: protocol %q", name, b.Protocol)
		}
		if b.Sent.State != "TASK_STATE_COMPLETED" || b.Sent.answer() != "Hello from the scripted model." || b.Sent.ContextID != b.Sent.ID {
			t.Errorf("%s: SendMessage: %+v", name, b.Sent)
		}
		if got := waitPhase(t, e, b.Sent.ID); got != "Succeeded/Completed" {
			t.Errorf("%s: the task's run is %s", name, got)
		}
		s := b.Streamed
		if len(s) < 4 || !strings.HasPrefix(s[0], "task TASK_STATE_") ||
			!slices.ContainsFunc(s, func(l string) bool { return strings.HasPrefix(l, "status TASK_STATE_WORKING run.started") }) ||
			!slices.Contains(s, "artifact answer Hello from the scripted model.") || s[len(s)-1] != "status TASK_STATE_COMPLETED " {
			t.Errorf("%s: SendStreamingMessage: %q", name, s)
		}
		if b.Got.State != "TASK_STATE_COMPLETED" || b.Got.ID != b.Sent.ID || !slices.Equal(b.Got.History, []string{"Say hello"}) {
			t.Errorf("%s: GetTask: %+v", name, b.Got)
		}
		if !strings.HasPrefix(b.Missing, "TaskNotFoundError") {
			t.Errorf("%s: GetTask of no task: %q", name, b.Missing)
		}
		if !strings.HasPrefix(b.CancelFinished, "TaskNotCancelableError") {
			t.Errorf("%s: CancelTask of a completed task: %q", name, b.CancelFinished)
		}
		if b.Asked.State != "TASK_STATE_INPUT_REQUIRED" || b.Asked.Status != "Which region should I cover?" {
			t.Errorf("%s: a task asking: %+v", name, b.Asked)
		}
		if b.Answered.ID != b.Asked.ID || b.Answered.State != "TASK_STATE_COMPLETED" || b.Answered.answer() != "Covering eu-west." {
			t.Errorf("%s: the answer to the task's question: %+v", name, b.Answered)
		}
		if b.Cancelled.State != "TASK_STATE_CANCELED" {
			t.Errorf("%s: CancelTask: %+v", name, b.Cancelled)
		}
		if got := waitPhase(t, e, b.Cancelled.ID); got != "Cancelled/UserCancelled" {
			t.Errorf("%s: the cancelled task's run is %s", name, got)
		}
		if !strings.HasPrefix(b.AfterCancel, "UnsupportedOperationError") {
			t.Errorf("%s: a message to a cancelled task: %q", name, b.AfterCancel)
		}
		if b.Approval.State != "TASK_STATE_AUTH_REQUIRED" || !strings.Contains(b.Approval.Status, e.URL+"/runs/"+b.Approval.ID) {
			t.Errorf("%s: a task waiting for an approval: %+v", name, b.Approval)
		}
		if got := waitPhase(t, e, b.Approval.ID); got != "Waiting/Approval" {
			t.Errorf("%s: the approval's run is %s: it must not be skipped", name, got)
		}
	}
	for name, l := range out.List {
		// notes has four tasks, two from each binding's turn: one answered, one cancelled.
		if len(l.All.IDs) != 4 || l.All.TotalSize != 4 || l.All.Next != "" || l.All.PageSize != 50 || slices.Contains(l.All.Artifacts, 1) {
			t.Errorf("%s: ListTasks of notes: %+v, want its 4 tasks on one page of 50, artifacts left out", name, l.All)
		}
		want := []string{out.HTTPJSON.Cancelled.ID, out.HTTPJSON.Asked.ID, out.JSONRPC.Cancelled.ID, out.JSONRPC.Asked.ID}
		if !slices.Equal(l.All.IDs, want) {
			t.Errorf("%s: ListTasks order: %v, want newest first %v", name, l.All.IDs, want)
		}
		var paged []string
		for i, p := range l.Pages {
			paged = append(paged, p.IDs...)
			if p.TotalSize != 4 || p.PageSize != 1 || (p.Next == "") != (i == len(l.Pages)-1) {
				t.Errorf("%s: page %d: %+v", name, i, p)
			}
		}
		if !slices.Equal(paged, want) {
			t.Errorf("%s: ListTasks a page of 1 at a time: %v, want %v", name, paged, want)
		}
		c := l.Completed
		if !slices.Equal(c.IDs, []string{out.HTTPJSON.Asked.ID, out.JSONRPC.Asked.ID}) || c.TotalSize != 2 ||
			!slices.Equal(c.States, []string{"TASK_STATE_COMPLETED", "TASK_STATE_COMPLETED"}) || !slices.Equal(c.Artifacts, []int{1, 1}) || !slices.Equal(c.History, []int{1, 1}) {
			t.Errorf("%s: ListTasks of completed tasks with artifacts and 1 history message: %+v", name, c)
		}
		if !slices.Equal(l.Context.IDs, want[:1]) || l.Context.TotalSize != 1 || len(l.NoContext.IDs) != 0 || l.NoContext.TotalSize != 0 || len(l.Future.IDs) != 0 {
			t.Errorf("%s: ListTasks by context %+v, of no context %+v, changed after 2999 %+v", name, l.Context, l.NoContext, l.Future)
		}
		if !strings.Contains(l.TooBig, "pageSize") || !strings.Contains(l.BadToken, "pageToken") {
			t.Errorf("%s: ListTasks with pageSize 101: %q; with a made-up token: %q", name, l.TooBig, l.BadToken)
		}
	}
	if len(out.List) != 2 {
		t.Errorf("ListTasks ran over %d bindings, want 2", len(out.List))
	}
}
