package deploy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

const deployScript = `
entries:
  - name: task
    match: "task-"
    turns:
      - tool_calls:
          - name: write
            input: {path: "out.txt", content: "done {{last_user}}"}
      - text: "finished {{last_user}}"
`

// dockerCompose finds Docker and a compose (the v2 plugin, else Debian's docker-compose 1.29) and
// the Debian base image CI makes with debootstrap, or skips saying what is missing.
func dockerCompose(t *testing.T) (compose []string, base string) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("deploy test skipped: no docker command (CI installs Debian's docker.io)")
	}
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Skipf("deploy test skipped: no Docker engine answers: %s", tail(string(out), 300))
	}
	if exec.Command("docker", "compose", "version").Run() == nil {
		compose = []string{"docker", "compose"}
	} else if p, err := exec.LookPath("docker-compose"); err == nil {
		compose = []string{p}
	} else {
		t.Skip("deploy test skipped: neither `docker compose` nor docker-compose (Debian's docker-compose package) is installed")
	}
	base = os.Getenv("AGENTRUN_DOCKER_BASE")
	if base == "" {
		base = "agentrun-ci/debian:bookworm"
	}
	if exec.Command("docker", "image", "inspect", base).Run() != nil {
		t.Skipf("deploy test skipped: no base image %s (.ci/run makes it with debootstrap; no registry is reached)", base)
	}
	return compose, base
}

// goImage makes (once) an image with this machine's Go on the Debian base: the Dockerfile's build
// stage needs Go, and no registry is reached here.
func goImage(t *testing.T, base string) string {
	t.Helper()
	tag := "agentrun-ci/golang:" + strings.TrimPrefix(runtime.Version(), "go")
	if exec.Command("docker", "image", "inspect", tag).Run() == nil {
		return tag
	}
	ctx := t.TempDir()
	if out, err := exec.Command("cp", "-a", runtime.GOROOT(), filepath.Join(ctx, "go")).CombinedOutput(); err != nil {
		t.Fatalf("copy GOROOT: %v %s", err, out)
	}
	df := "FROM " + base + "\nCOPY go /usr/local/go\nENV PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
	if err := os.WriteFile(filepath.Join(ctx, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("docker", "build", "-q", "-t", tag, ctx).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", tag, err, tail(string(out), 3000))
	}
	return tag
}

// buildContext copies the repository's working tree (what git tracks or would, as a user's clone
// has it) and a vendor folder of its modules (the build runs offline) into a folder.
func buildContext(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dst := t.TempDir()
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, rel)
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() || strings.HasPrefix(rel, "deploy/.env") {
			continue // deleted in the working tree, a link, or local secrets
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, fi.Mode().Perm()|0o444); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "mod", "vendor", "-o", filepath.Join(dst, "vendor"))
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod vendor: %v\n%s", err, out)
	}
	return dst
}

// TestComposeServerAndTwoRunners builds deploy/Dockerfile (on the Debian base, Go copied in) and
// runs deploy/compose.yaml's server and two runners as written (SQLite on the shared store volume,
// each process its own /data), with the scripted model server as one more container of the same
// image. The server's log gives the console link, the setup code and the token; an agent applied
// through the published loopback port runs to the end; one runner container is killed and a
// second run still finishes, on the other runner.
func TestComposeServerAndTwoRunners(t *testing.T) { testCompose(t, false) }

// TestComposePostgresProfile: the same with `--profile pg` and AGENTRUN_STORE_URL in .env, every
// process on PostgreSQL (an image made here from Debian's postgresql package, since no registry is
// reached: POSTGRES_IMAGE); the server's /readyz goes unready while PostgreSQL is stopped and ready
// again once it is back.
func TestComposePostgresProfile(t *testing.T) { testCompose(t, true) }

// pgImage makes (once) a PostgreSQL image on the Debian base that starts as the official image
// does for what compose.yaml uses (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB, the data folder).
func pgImage(t *testing.T, base string) string {
	t.Helper()
	tag := "agentrun-ci/postgres:bookworm"
	if exec.Command("docker", "image", "inspect", tag).Run() == nil {
		return tag
	}
	ctx := t.TempDir()
	entry := `#!/bin/sh
set -e
PG=$(ls -d /usr/lib/postgresql/*/bin | head -1)
D=/var/lib/postgresql/data
mkdir -p "$D" && chown postgres:postgres "$D" && chmod 700 "$D"
if [ ! -s "$D/PG_VERSION" ]; then
  printf '%s
' "$POSTGRES_PASSWORD" > /tmp/pw && chown postgres /tmp/pw
  setpriv --reuid=postgres --regid=postgres --init-groups "$PG/initdb" -D "$D" -U "$POSTGRES_USER" --pwfile=/tmp/pw --auth=scram-sha-256 >/dev/null
  rm /tmp/pw
  echo "listen_addresses = '*'" >> "$D/postgresql.conf"
  echo "host all all 0.0.0.0/0 scram-sha-256" >> "$D/pg_hba.conf"
  echo "CREATE DATABASE $POSTGRES_DB" | setpriv --reuid=postgres --regid=postgres --init-groups "$PG/postgres" --single -D "$D" postgres >/dev/null
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups "$PG/postgres" -D "$D"
`
	df := "FROM " + base + "\nRUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql && rm -rf /var/lib/apt/lists/*\n" +
		"COPY entry.sh /entry.sh\nRUN chmod 755 /entry.sh && mkdir -p /run/postgresql && chown postgres /run/postgresql\nENTRYPOINT [\"/entry.sh\"]\n"
	os.WriteFile(filepath.Join(ctx, "entry.sh"), []byte(entry), 0o755)
	os.WriteFile(filepath.Join(ctx, "Dockerfile"), []byte(df), 0o644)
	if out, err := exec.Command("docker", "build", "-q", "-t", tag, ctx).CombinedOutput(); err != nil {
		t.Skipf("pg profile test skipped: a PostgreSQL image could not be made from Debian's packages here: %v\n%s", err, tail(string(out), 2000))
	}
	return tag
}

func testCompose(t *testing.T, pg bool) {
	compose, base := dockerCompose(t)
	pgimg := ""
	if pg {
		pgimg = pgImage(t, base)
	}
	gimg := goImage(t, base)
	ctxDir := buildContext(t)
	deploy := filepath.Join(ctxDir, "deploy")
	if err := os.MkdirAll(filepath.Join(deploy, "script"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deploy, "script", "script.yaml"), []byte(deployScript), 0o644); err != nil {
		t.Fatal(err)
	}
	project := fmt.Sprintf("agentrune2e%d", os.Getpid())
	image := "agentrun:" + project
	override := `services:
  model:
    image: ` + image + `
    build:
      context: ..
      dockerfile: deploy/Dockerfile
      args: {GO_IMAGE: ` + gimg + `, RUNTIME_IMAGE: ` + base + `}
    command: ["dev", "model-server", "--script", "/script/script.yaml", "--addr", "0.0.0.0:8787"]
    volumes: ["./script:/script:ro"]
  server:
    depends_on: [model]
`
	if err := os.WriteFile(filepath.Join(deploy, "e2e.override.yaml"), []byte(override), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	key := make([]byte, 32)
	rand.Read(key)
	// The seed's .env: the seal key (and here the scripted model in place of OpenRouter).
	dotenv := fmt.Sprintf("AGENTRUN_SEAL_KEY=%s\nANTHROPIC_API_KEY=scripted\nANTHROPIC_BASE_URL=http://model:8787\n", base64.StdEncoding.EncodeToString(key))
	if pg {
		dotenv += "AGENTRUN_STORE_URL=postgres://agentrun:agentrun@postgres:5432/agentrun?sslmode=disable\n"
	}
	if err := os.WriteFile(filepath.Join(deploy, ".env"), []byte(dotenv), 0o600); err != nil {
		t.Fatal(err)
	}
	dc := func(timeout time.Duration, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		all := append(append([]string{}, compose[1:]...), "-p", project, "-f", "compose.yaml", "-f", "e2e.override.yaml")
		if pg {
			all = append(all, "--profile", "pg")
		}
		all = append(all, args...)
		cmd := exec.CommandContext(ctx, compose[0], all...)
		cmd.Dir = deploy
		cmd.Env = append(os.Environ(), "AGENTRUN_IMAGE="+image, "GO_IMAGE="+gimg, "RUNTIME_IMAGE="+base,
			fmt.Sprintf("AGENTRUN_PORT=%d", port), "COMPOSE_DOCKER_CLI_BUILD=0", "POSTGRES_IMAGE="+pgimg)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := dc(time.Minute, "logs", "--no-color", "--tail", "80")
			t.Logf("compose logs:\n%s", tail(out, 8000))
		}
		dc(2*time.Minute, "down", "-v", "--remove-orphans")
		exec.Command("docker", "image", "rm", "-f", image).Run()
	})
	if out, err := dc(15*time.Minute, "up", "-d", "--build"); err != nil {
		t.Fatalf("compose up -d --build: %v\n%s", err, tail(out, 6000))
	}

	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	var logs string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		logs, _ = dc(time.Minute, "logs", "--no-color", "server")
		if resp, err := http.Get(url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.Contains(logs, "token:") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not come up on %s:\n%s", url, tail(logs, 4000))
		}
		time.Sleep(time.Second)
	}
	for _, want := range []string{"console:", "setup code:", "token:"} {
		if !strings.Contains(logs, want) {
			t.Errorf("`compose logs server` lacks %q:\n%s", want, logs)
		}
	}
	m := regexp.MustCompile(`\btoken:\s+(\S+)\s+\(made now`).FindStringSubmatch(logs)
	if m == nil {
		t.Fatalf("no token in the server's log:\n%s", logs)
	}
	token := m[1]
	call := func(method, path, body string, out any) int {
		t.Helper()
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if out != nil {
			json.Unmarshal(b, out)
		}
		return resp.StatusCode
	}
	if st := call("PUT", "/v2/agents/worker", `{"metadata":{"name":"worker"},"spec":{"tools":["write"]}}`, nil); st != 200 && st != 201 {
		t.Fatalf("apply the agent: HTTP %d", st)
	}
	runToEnd := func(name string) api.AgentRun {
		t.Helper()
		body := fmt.Sprintf(`{"kind":"AgentRun","metadata":{"name":%q},"spec":{"agent":"worker","input":%q}}`, name, name)
		if st := call("POST", "/v2/agentruns", body, nil); st != 201 {
			t.Fatalf("create %s: HTTP %d", name, st)
		}
		deadline := time.Now().Add(3 * time.Minute)
		for {
			var r api.AgentRun
			call("GET", "/v2/agentruns/"+name, "", &r)
			if api.Finished(r.Status.Phase) {
				if r.Status.Phase != api.PhaseSucceeded {
					t.Fatalf("%s ended %s: %s", name, r.Status.Phase, r.Status.Message)
				}
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not finish: %s %s", name, r.Status.Phase, r.Status.Reason)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	first := runToEnd("task-1")
	if first.Status.Runner != "runner-1" && first.Status.Runner != "runner-2" {
		t.Errorf("task-1 ran on %q, want one of the runner containers (the server runs none)", first.Status.Runner)
	}
	if out, err := dc(time.Minute, "kill", "runner-1"); err != nil {
		t.Fatalf("kill runner-1: %v %s", err, out)
	}
	second := runToEnd("task-2")
	if second.Status.Runner != "runner-2" {
		t.Errorf("task-2 ran on %q after runner-1 was killed, want runner-2", second.Status.Runner)
	}
	if st := call("GET", "/v2/agentruns/task-2/files/out.txt", "", nil); st != 200 {
		t.Errorf("task-2's out.txt: HTTP %d", st)
	}
	if !pg {
		return
	}
	if !strings.Contains(logs, "store:     postgres at") {
		t.Errorf("with --profile pg the server is not on PostgreSQL:\n%s", logs)
	}
	waitReadyz := func(want int) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			st, body := 0, ""
			if resp, err := http.Get(url + "/readyz"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				st, body = resp.StatusCode, string(b)
			}
			if st == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("server /readyz: %d %q, want %d", st, body, want)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	if out, err := dc(time.Minute, "stop", "postgres"); err != nil {
		t.Fatalf("stop postgres: %v %s", err, out)
	}
	waitReadyz(http.StatusServiceUnavailable)
	if out, err := dc(time.Minute, "start", "postgres"); err != nil {
		t.Fatalf("start postgres: %v %s", err, out)
	}
	waitReadyz(200)
	runToEnd("task-3")
}

// tail is the last n bytes of s, for error messages.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
