package computer

import (
	"bytes"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

func needDesktop(t *testing.T) {
	t.Helper()
	NeedBwrap(t)
	for _, bin := range []string{"Xvfb", "xdotool", "xwd", "xev", "xsetroot"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("desktop tests skipped: %s not installed (apt-get install xvfb xdotool x11-apps x11-utils x11-xserver-utils; .ci/run does)", bin)
		}
	}
}

// An agent with a Linux desktop paints its screen, looks at it (the model is sent the
// screenshot as an image), opens a window and clicks and types into it; the window's own
// event log shows the click where the agent aimed and the keys it typed.
func TestDesktopAgent(t *testing.T) {
	t.Parallel()
	needDesktop(t)
	e := NewEnv(t, `
entries:
  - name: desktop
    match: "Use the desktop"
    turns:
      - tool_calls:
          - name: bash
            input: {command: "xsetroot -solid '#ff0000' && echo painted"}
      - tool_calls:
          - name: desktop_screenshot
            input: {}
      - text: "I saw {{last_tool_images}}"
  - name: window
    match: "Click the window"
    turns:
      - tool_calls:
          - name: bash
            input: {command: "xev -bw 0 -geometry 300x200+100+100", background: true}
      - tool_calls:
          - name: bash
            input: {command: "for i in $(seq 100); do xdotool search --name . >/dev/null 2>&1 && break; sleep 0.1; done; sleep 0.5; echo ready"}
      - tool_calls:
          - name: desktop_click
            input: {x: 150, "y": 170}
      - tool_calls:
          - name: desktop_type
            input: {text: "hi"}
      - tool_calls:
          - name: desktop_key
            input: {keys: "ctrl+a"}
      - tool_calls:
          - name: desktop_click
            input: {x: 5000, "y": 10}
      - tool_calls:
          - name: bash
            input: {command: "sleep 0.5; echo waited"}
      - tool_calls:
          - name: bash_output
            input: {id: "p1"}
      - text: "The window saw it all"
  - name: takeover
    match: "Hand me over"
    turns:
      - tool_calls:
          - name: bash
            input: {command: "xev -bw 0 -geometry 300x200+100+100", background: true}
      - tool_calls:
          - name: bash
            input: {command: "for i in $(seq 100); do xdotool search --name . >/dev/null 2>&1 && break; sleep 0.1; done; sleep 0.5; echo ready"}
      - tool_calls:
          - name: ask_person
            input: {question: "Please click the window and type ok.", takeover: true}
      - tool_calls:
          - name: bash_output
            input: {id: "p1"}
      - text: "done"
`)
	e.Start()
	var a api.Agent
	if st := e.Do("PUT", "/v2/agents/painter", `{"metadata":{"name":"painter"},"spec":{"model":{"access":"Nodus"},"tools":["ask_person"],"computer":{"kind":"desktop"}}}`, &a); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	if a.Spec.Computer == nil || a.Spec.Computer.Provider != "local" {
		t.Fatalf("computer = %+v, want the local desktop", a.Spec.Computer)
	}

	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"paint"},"spec":{"agent":"painter","input":"Use the desktop: paint it red and look"}}`, nil)
	r := e.WaitPhase("paint", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("paint ended %s: %s", r.Status.Phase, r.Status.Message)
	}
	// The model got the screenshot itself, in the vendor's wire format.
	if got := r.Status.Answer.Preview; got != "I saw 1 image: image/png 1280x800" {
		t.Errorf("answer = %q: the model was not sent the screenshot", got)
	}
	shot := e.MustCLI(0, "runs", "read-file", "paint", "screenshots/1.png").Stdout
	img, err := png.Decode(bytes.NewReader([]byte(shot)))
	if err != nil {
		t.Fatalf("screenshots/1.png in the run folder: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 800 {
		t.Errorf("screenshot is %v, want 1280x800", b)
	}
	for _, p := range []image.Point{{10, 10}, {640, 400}, {1270, 790}} {
		if r, g, b, _ := img.At(p.X, p.Y).RGBA(); r>>8 != 0xff || g>>8 != 0 || b>>8 != 0 {
			t.Errorf("pixel %v is #%02x%02x%02x, want the red the agent painted", p, r>>8, g>>8, b>>8)
		}
	}

	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"win"},"spec":{"agent":"painter","input":"Click the window and type"}}`, nil)
	r = e.WaitPhase("win", 90*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("win ended %s: %s", r.Status.Phase, r.Status.Message)
	}
	results := e.ToolResults("win")
	if got := results["t2/tool/0"].Content; got != "clicked the left button at (150, 170); take a screenshot to see what it did" {
		t.Errorf("desktop_click said %q", got)
	}
	if got := results["t5/tool/0"].Content; !strings.Contains(got, "off the screen") || !strings.Contains(got, "0..1279") {
		t.Errorf("a click off the screen said %q, want a mistake naming the screen's bounds", got)
	}
	// xev reports the click relative to its window at (100, 100), then the keys.
	log := results["t7/tool/0"].Content
	for _, want := range []string{"ButtonPress event", "(50,70), root:(150,170)", "(keysym 0x68, h)", "(keysym 0x69, i)", "Control_L", "(keysym 0x61, a)"} {
		if !strings.Contains(log, want) {
			t.Errorf("the window's event log lacks %q:\n%s", want, log)
		}
	}
	steps := e.MustCLI(0, "agentrun", "steps", "win").Stdout
	if !strings.Contains(steps, "create desktop computer (local)") {
		t.Errorf("steps do not show the desktop:\n%s", steps)
	}

	// The agent hands its desktop to a person, who watches its screen in the console and
	// clicks, types and presses a key there; the window the agent opened sees each.
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"hand"},"spec":{"agent":"painter","input":"Hand me over"}}`, nil)
	r = e.WaitPhase("hand", 60*time.Second, api.PhaseWaiting, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.WaitingOn == nil || r.Status.WaitingOn.Kind != "takeover" {
		t.Fatalf("hand is %s (%s), waiting on %+v; want a takeover", r.Status.Phase, r.Status.Message, r.Status.WaitingOn)
	}
	session := &http.Cookie{Name: "agentrun_session", Value: e.PersonSession()}
	send := func(method, path, body string, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, e.URL+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.AddCookie(session)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := HTTPNoRedirectClient().Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	_, page := send("GET", "/runs/hand", "")
	m := regexp.MustCompile(`data-control="true" data-csrf="(\w+)"`).FindSubmatch(page)
	if m == nil || !bytes.Contains(page, []byte("the agent handed you its desktop")) {
		t.Fatalf("the run page of a desktop takeover:\n%s", page)
	}
	csrf := string(m[1])
	resp, frame := send("GET", "/runs/hand/screen.jpg", "")
	if cfg, err := jpeg.DecodeConfig(bytes.NewReader(frame)); resp.StatusCode != 200 || err != nil || cfg.Width != 1280 || cfg.Height != 800 {
		t.Errorf("the desktop's screen.jpg: HTTP %d %+v (%v)", resp.StatusCode, cfg, err)
	}
	for _, act := range []struct{ path, body, says string }{
		{"click", `{"x": 120, "y": 130}`, "clicked at (120, 130)"},
		{"type", `{"text": "ok"}`, "typed 2 characters"},
		{"key", `{"key": "Enter"}`, "pressed Enter"},
	} {
		if resp, body := send("POST", "/runs/hand/screen/"+act.path, act.body, "X-CSRF-Token", csrf); resp.StatusCode != 200 || !strings.Contains(string(body), act.says) {
			t.Errorf("%s on the desktop: HTTP %d %s", act.path, resp.StatusCode, body)
		}
	}
	e.Do("POST", "/v2/agentruns/hand/messages", `{"payload": "done"}`, nil)
	r = e.WaitPhase("hand", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("hand ended %s: %s", r.Status.Phase, r.Status.Message)
	}
	seen := e.ToolResults("hand")["t3/tool/0"].Content
	for _, want := range []string{"ButtonPress event", "(20,30), root:(120,130)", "(keysym 0x6f, o)", "(keysym 0x6b, k)", "(keysym 0xff0d, Return)"} {
		if !strings.Contains(seen, want) {
			t.Errorf("after the takeover the window's event log lacks %q:\n%s", want, seen)
		}
	}
	var took []string
	for _, ev := range e.Events("hand") {
		if strings.HasPrefix(string(ev.Type), "takeover.") {
			took = append(took, ev.Message)
		}
	}
	if len(took) != 3 || !strings.Contains(took[0], "clicked the run's desktop at (120, 130)") {
		t.Errorf("the takeover's timeline: %q", took)
	}
}
