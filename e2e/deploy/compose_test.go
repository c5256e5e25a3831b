package deploy

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
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
	t0 := time.Now()
	// The context is a tar of GOROOT streamed to the engine: no copy of it on disk.
	df := "FROM " + base + "\nCOPY go /usr/local/go\nENV PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
	if out, err := dockerBuildTar(tag, df, runtime.GOROOT(), "go"); err != nil {
		t.Fatalf("build %s: %v\n%s", tag, err, tail(out, 3000))
	}
	t.Logf("made %s in %s", tag, time.Since(t0).Round(time.Second))
	return tag
}

// buildContext copies the repository's working tree (what git tracks or would, as a user's clone
// has it) into a folder, with a vendor folder of its modules when the image is built from it (the
// build runs offline).
func buildContext(t *testing.T, vendor bool) string {
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
	if !vendor {
		return dst
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
	t0 := time.Now()
	defer func() { t.Logf("made %s in %s", tag, time.Since(t0).Round(time.Second)) }()
	if out, err := exec.Command("docker", "build", "-q", "-t", tag, ctx).CombinedOutput(); err != nil {
		t.Skipf("pg profile test skipped: a PostgreSQL image could not be made from Debian's packages here: %v\n%s", err, tail(string(out), 2000))
	}
	return tag
}

// The image both compose tests run, built once per test process from deploy/Dockerfile as
// written; TestMain removes it and the seeded Go image it was built with.
var (
	imageOnce sync.Once
	imageTag  string
	seededTag string
	imageErr  error
)

// serverImage builds (once) the agentrun image from deploy/Dockerfile on the Debian base, Go
// copied in, and returns its tag. The Dockerfile's go build is most of the package's time when
// it starts from nothing (there is no Go build cache in a build stage), so its Go image is given
// one (seededGoImage): the stage still runs the Dockerfile's go build as written, finding there
// what this machine compiled before.
func serverImage(t *testing.T, base string) string {
	t.Helper()
	imageOnce.Do(func() {
		gimg := goImage(t, base)
		ctxDir := buildContext(t, true)
		if seeded, err := seededGoImage(t, gimg, ctxDir); err != nil {
			t.Logf("the build stage starts without a Go build cache: %v", err)
		} else {
			gimg, seededTag = seeded, seeded
		}
		tag := fmt.Sprintf("agentrun:e2e%d", os.Getpid())
		t0 := time.Now()
		build := func() ([]byte, error) {
			cmd := exec.Command("docker", "build", "-q", "-f", "deploy/Dockerfile", "-t", tag,
				"--build-arg", "GO_IMAGE="+gimg, "--build-arg", "RUNTIME_IMAGE="+base, ".")
			cmd.Dir = ctxDir
			return cmd.CombinedOutput()
		}
		out, err := build()
		if err != nil && engineLostRoot(string(out)) {
			// Seen in CI: the engine's overlay2 had not mounted a build step's root
			// ("lchown .../merged/src: no such file or directory" at COPY); the same build
			// passes again. Any other failure is the Dockerfile's and fails the test.
			t.Logf("docker build: the engine lost a step's root; building once more:\n%s", tail(string(out), 600))
			out, err = build()
		}
		if err != nil {
			imageErr = fmt.Errorf("docker build -f deploy/Dockerfile: %v\n%s", err, tail(string(out), 6000))
			return
		}
		t.Logf("built %s from deploy/Dockerfile in %s", tag, time.Since(t0).Round(time.Second))
		imageTag = tag
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageTag
}

// seededGoImage is gimg with a Go build cache at its GOCACHE, for the Dockerfile's build stage:
// the cache is kept in this user's cache folder between runs and brought up to date by building
// the binary here the way the stage does (the same toolchain, copied into gimg; the same
// environment and flags, which must follow deploy/Dockerfile's RUN go build; the same vendored
// sources). With -trimpath the cache's keys do not name the source folder, so the stage's
// build, in /src, finds what this one compiled; a change of the Dockerfile's flags only makes
// the stage compile again.
func seededGoImage(t *testing.T, gimg, ctxDir string) (string, error) {
	t.Helper()
	ucache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	cache := filepath.Join(ucache, "agentrun-e2e", "deploy-go-build")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	t0 := time.Now()
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X agentrun.dev/agentrun/internal/app.version=dev",
		"-o", filepath.Join(t.TempDir(), "agentrun"), "./cmd/agentrun")
	cmd.Dir = ctxDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false", "GOCACHE="+cache)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build as the build stage does: %v\n%s", err, tail(string(out), 3000))
	}
	t.Logf("the build stage's Go cache (%s) brought up to date here in %s", cache, time.Since(t0).Round(time.Second))
	t0 = time.Now()
	tag := fmt.Sprintf("agentrun-ci/golang-cache:e2e%d", os.Getpid())
	df := "FROM " + gimg + "\nCOPY go-build /root/.cache/go-build\nENV GOCACHE=/root/.cache/go-build\n"
	if out, err := dockerBuildTar(tag, df, cache, "go-build"); err != nil {
		return "", fmt.Errorf("docker build %s: %v\n%s", tag, err, tail(out, 3000))
	}
	t.Logf("made %s (%s with the cache) in %s", tag, gimg, time.Since(t0).Round(time.Second))
	return tag, nil
}

// dockerBuildTar builds image tag from a context streamed to the engine as a tar (no copy of
// dir on disk): dockerfile, and folder dir as as/.
func dockerBuildTar(tag, dockerfile, dir, as string) (string, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarContext(pw, dockerfile, dir, as)) }()
	build := exec.Command("docker", "build", "-q", "-t", tag, "-")
	build.Stdin = pr
	out, err := build.CombinedOutput()
	pr.CloseWithError(io.ErrClosedPipe) // ends tarContext if the build stopped reading
	return string(out), err
}

// tarContext writes a build context to w: a Dockerfile, and folder dir as as/ (regular files
// and folders; GOROOT's few links are not needed to build).
func tarContext(w io.Writer, dockerfile, dir, as string) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.WriteString(tw, dockerfile); err != nil {
		return err
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(filepath.Join(as, rel))
		if d.IsDir() {
			if rel == "." {
				name = as
			}
			return tw.WriteHeader(&tar.Header{Name: name + "/", Mode: 0o755, Typeflag: tar.TypeDir})
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: int64(fi.Mode().Perm()), Size: fi.Size(), ModTime: fi.ModTime(), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = io.CopyN(tw, f, fi.Size())
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// engineLostRoot reports whether docker build's output is the engine failing to find the root of
// a step's container in its overlay2 folder, not a step of the Dockerfile failing.
func engineLostRoot(out string) bool {
	return strings.Contains(out, "/merged/") && strings.Contains(out, "no such file or directory") &&
		!strings.Contains(out, "returned a non-zero code")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if seededTag != "" {
		removeBuiltOn(seededTag)
	}
	for _, tag := range []string{imageTag, seededTag} {
		if tag != "" {
			exec.Command("docker", "image", "rm", "-f", tag).Run()
		}
	}
	os.Exit(code)
}

func testCompose(t *testing.T, pg bool) {
	t.Parallel()
	compose, base := dockerCompose(t)
	pgimg := ""
	if pg {
		pgimg = pgImage(t, base)
	}
	image := serverImage(t, base)
	gimg := goImage(t, base) // named in the environment compose.yaml reads; nothing is built here
	ctxDir := buildContext(t, false)
	deploy := filepath.Join(ctxDir, "deploy")
	if err := os.MkdirAll(filepath.Join(deploy, "script"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deploy, "script", "script.yaml"), []byte(deployScript), 0o644); err != nil {
		t.Fatal(err)
	}
	project := fmt.Sprintf("agentrune2e%d", os.Getpid())
	if pg {
		project += "pg"
	}
	override := `services:
  model:
    image: ` + image + `
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
	})
	// The image exists (serverImage), so compose runs it as compose.yaml names it, building nothing.
	if out, err := dc(10*time.Minute, "up", "-d"); err != nil {
		t.Fatalf("compose up -d: %v\n%s", err, tail(out, 6000))
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

// removeBuiltOn removes the untagged images built on image tag: the classic builder keeps the
// Dockerfile's build stage as one (the seeded cache and the build context in it, a gigabyte),
// which would otherwise be left on every run. Only those whose parents lead to tag are removed.
func removeBuiltOn(tag string) {
	id, err := exec.Command("docker", "image", "inspect", "--format", "{{.ID}}", tag).Output()
	if err != nil {
		return
	}
	root := strings.TrimSpace(string(id))
	out, _ := exec.Command("docker", "image", "ls", "-q", "--no-trunc", "--filter", "dangling=true", "--filter", "since="+tag).Output()
	for _, img := range strings.Fields(string(out)) {
		p := img
		for range 20 {
			b, err := exec.Command("docker", "image", "inspect", "--format", "{{.Parent}}", p).Output()
			if p = strings.TrimSpace(string(b)); err != nil || p == "" || p == root {
				break
			}
		}
		if p == root {
			exec.Command("docker", "image", "rm", img).Run()
		}
	}
}

// tail is the last n bytes of s, for error messages.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
