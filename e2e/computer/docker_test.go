package computer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// capability returns the docker provider's line of `agentrun server capabilities`.
func dockerCapability(t *testing.T, e *Env) map[string]any {
	t.Helper()
	r := e.MustCLI(0, "server", "capabilities")
	var caps struct {
		Computers []map[string]any `json:"computers"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &caps); err != nil {
		t.Fatalf("capabilities: %v\n%s", err, r.Stdout)
	}
	for _, c := range caps.Computers {
		if c["provider"] == "docker" {
			return c
		}
	}
	t.Fatalf("no docker provider in %s", r.Stdout)
	return nil
}

// The AgentRun seed: "If Docker is running on your machine, new agents get a Docker sandbox with a
// shell. Its image builds on first use ... and the console says when it's ready." A server whose
// docker image is not built yet says so; the first run of an agent with a docker sandbox waits on
// the build (its timeline says so), then runs the Nodus seed's `python3 --version` in a container;
// afterwards the CLI and Mission Control say the image is built.
func TestDockerSandboxBuiltOnFirstUse(t *testing.T) {
	t.Parallel()
	base := NeedDockerBase(t)
	// A base under a name of its own gives an image tag of its own, so this test sees the build
	// even where another test built the image from the usual base.
	fresh := fmt.Sprintf("agentrun-e2e/base:%d", time.Now().UnixNano())
	if out, err := exec.Command("docker", "tag", base, fresh).CombinedOutput(); err != nil {
		t.Fatalf("docker tag: %v %s", err, out)
	}
	var built string
	t.Cleanup(func() {
		args := []string{"rmi", fresh}
		if built != "" {
			args = append(args, built)
		}
		exec.Command("docker", args...).Run()
	})
	e := NewEnv(t, `
entries:
  - name: python
    match: "Python version"
    turns:
      - tool_calls:
          - name: bash
            input: {command: "python3 --version && cat /proc/1/cgroup | head -1 && hostname"}
      - text: "It is {{last_tool_result}}"
`)
	e.Start("AGENTRUN_DOCKER_BASE=" + fresh)

	c := dockerCapability(t, e)
	note, _ := c["note"].(string)
	if c["available"] != true || !strings.Contains(note, "not built yet") || !strings.Contains(note, fresh) {
		t.Fatalf("before the first sandbox: %v", c)
	}
	if st := e.Do("PUT", "/v2/agents/docker-agent", `{"metadata":{"name":"docker-agent"},"spec":{"model":{"access":"Nodus"},"computer":{"kind":"sandbox","provider":"docker"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	name := "py-docker"
	if st := e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"py-docker"},"spec":{"agent":"docker-agent","input":"What is the Python version?"}}`, nil); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	run := e.WaitPhase(name, 3*time.Minute, api.PhaseSucceeded, api.PhaseFailed)
	if run.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run %s: %s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	ans := e.MustCLI(0, "runs", "answer", name).Stdout
	if !strings.Contains(ans, "Python 3") || !strings.Contains(ans, "sandbox") {
		t.Errorf("answer %q: want the container's python3 and hostname", ans)
	}
	var preparing, prepared, created bool
	for _, ev := range e.Events(name) {
		switch ev.Type {
		case "computer.preparing":
			preparing = strings.Contains(ev.Message, "waiting for the docker provider") && strings.Contains(ev.Message, fresh)
		case "computer.prepared":
			prepared = preparing
		}
	}
	for _, s := range e.Steps(name) {
		if s.Kind == "computer" && s.State == api.StepCompleted && strings.Contains(string(s.Result), "provider: docker") {
			created = true
		}
	}
	if !preparing || !prepared || !created {
		t.Errorf("timeline says preparing %v, prepared %v (in order); computer step by docker %v: %+v", preparing, prepared, created, e.Events(name))
	}

	c = dockerCapability(t, e)
	note, _ = c["note"].(string)
	m := regexp.MustCompile(`image (agentrun-sandbox:[0-9a-f]+) built`).FindStringSubmatch(note)
	if c["available"] != true || m == nil {
		t.Fatalf("after the first sandbox: %v", c)
	}
	built = m[1]

	// Mission Control says so too.
	req, _ := http.NewRequest("GET", e.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: "agentrun_session", Value: e.PersonSession()})
	resp, err := HTTPNoRedirectClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), `id="computers"`) || !strings.Contains(string(page), "image "+built+" built") {
		t.Errorf("Mission Control (HTTP %d) does not say the docker image is built:\n%s", resp.StatusCode, page)
	}
	// No container of the finished run is left.
	NoContainers(t, name)
}

// The AgentRun seed lists Docker among the desktop providers. An agent with computer {kind:
// desktop, provider: docker} paints its screen and looks at it: the model is sent the
// screenshot; the first run waits on the builds of the sandbox image and of the desktop image
// made from it, which its timeline says; the desktop is a container, gone when the run ends.
func TestDockerDesktop(t *testing.T) {
	t.Parallel()
	base := NeedDockerBase(t)
	// A base of its own, so that this run builds (and waits for) both images whatever other
	// tests built before.
	fresh := fmt.Sprintf("agentrun-e2e/desktop-base:%d", time.Now().UnixNano())
	if out, err := exec.Command("docker", "tag", base, fresh).CombinedOutput(); err != nil {
		t.Fatalf("docker tag: %v %s", err, out)
	}
	var built []string
	t.Cleanup(func() { exec.Command("docker", append(append([]string{"rmi"}, built...), fresh)...).Run() })
	e := NewEnv(t, `
entries:
  - name: docker-desktop
    match: "Use the docker desktop"
    turns:
      - tool_calls:
          - name: bash
            input: {command: "xsetroot -solid '#00ff00' && hostname && echo $DISPLAY"}
      - tool_calls:
          - name: desktop_click
            input: {x: 640, "y": 400}
      - tool_calls:
          - name: desktop_screenshot
            input: {}
      - text: "I saw {{last_tool_images}}"
`)
	e.Start("AGENTRUN_DOCKER_BASE=" + fresh)
	if st := e.Do("PUT", "/v2/agents/docker-desk", `{"metadata":{"name":"docker-desk"},"spec":{"model":{"access":"Nodus"},"computer":{"kind":"desktop","provider":"docker"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	name := "docker-paint"
	if st := e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"docker-paint"},"spec":{"agent":"docker-desk","input":"Use the docker desktop: paint it and look"}}`, nil); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	run := e.WaitPhase(name, 5*time.Minute, api.PhaseSucceeded, api.PhaseFailed)
	var preparing string
	var prepared bool
	for _, ev := range e.Events(name) {
		switch ev.Type {
		case "computer.preparing":
			preparing = ev.Message
			built = regexp.MustCompile(`agentrun-(?:desktop|sandbox):[0-9a-f]+`).FindAllString(ev.Message, -1)
			slices.Reverse(built) // the desktop image first: it is the sandbox image's child
		case "computer.prepared":
			prepared = preparing != ""
			t.Logf("%s\n%s", preparing, ev.Message)
		}
	}
	if run.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run %s: %s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	if got := run.Status.Answer.Preview; got != "I saw 1 image: image/png 1280x800" {
		t.Errorf("answer = %q: the model was not sent the screenshot", got)
	}
	if !strings.Contains(preparing, "waiting for the docker provider: image agentrun-sandbox:") || !strings.Contains(preparing, "from "+fresh) ||
		!strings.Contains(preparing, "then image agentrun-desktop:") || len(built) != 2 || !prepared {
		t.Errorf("the timeline does not say the run waits on the sandbox and desktop images (prepared after: %v): %q", prepared, preparing)
	}
	shot := e.MustCLI(0, "runs", "read-file", name, "screenshots/1.png").Stdout
	img, err := png.Decode(bytes.NewReader([]byte(shot)))
	if err != nil {
		t.Fatalf("screenshots/1.png in the run folder: %v", err)
	}
	if r, g, b, _ := img.At(10, 10).RGBA(); r>>8 != 0 || g>>8 != 0xff || b>>8 != 0 {
		t.Errorf("pixel (10, 10) is #%02x%02x%02x, want the green the agent painted", r>>8, g>>8, b>>8)
	}
	var created bool
	for _, s := range e.Steps(name) {
		if s.Kind == "computer" && s.State == api.StepCompleted && strings.Contains(string(s.Result), "provider: docker") &&
			strings.Contains(string(s.Result), "agentrun-desktop:") {
			created = true
		}
	}
	results := e.ToolResults(name)
	if !created {
		t.Errorf("no computer step made a docker desktop: %+v", e.Steps(name))
	}
	if got := results["t0/tool/0"].Content; !strings.Contains(got, "sandbox\n:99") {
		t.Errorf("bash in the desktop said %q, want the container's hostname and DISPLAY", got)
	}
	if got := results["t1/tool/0"].Content; !strings.HasPrefix(got, "clicked the left button at (640, 400)") {
		t.Errorf("desktop_click said %q", got)
	}
	NoContainers(t, name)
}
