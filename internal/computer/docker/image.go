package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"agentrun.dev/agentrun/internal/computer"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// dockerfile is the sandbox image's recipe; the base image is its BASE
// build argument.
//
//go:embed Dockerfile
var dockerfile string

// desktopDockerfile is the desktop image's recipe; its BASE build argument
// is the sandbox image.
//
//go:embed Dockerfile.desktop
var desktopDockerfile string

// DefaultBase is the base image when neither Provider.BaseImage nor
// AGENTRUN_DOCKER_BASE names one.
const DefaultBase = "debian:bookworm-slim"

// imageRepo is the repository of the sandbox images; the tag is a hash of
// the Dockerfile and the base, so a new server version or base gets a new
// image and an old one is never used by mistake.
const imageRepo = "agentrun-sandbox"

// desktopRepo is the repository of the desktop images, tagged likewise from
// their Dockerfile and their base (the sandbox image's tag).
const desktopRepo = "agentrun-desktop"

const (
	buildTimeout = 20 * time.Minute
	pullTimeout  = 2 * time.Minute
	// failedFor is how long Available reports a failed build (and so keeps
	// the registry from picking this provider); Prepare or Create try again
	// at any time.
	failedFor = 5 * time.Minute
)

// base returns the base image this provider builds from.
func (p *Provider) base() string {
	if p.BaseImage != "" {
		return p.BaseImage
	}
	if b := os.Getenv("AGENTRUN_DOCKER_BASE"); b != "" {
		return b
	}
	return DefaultBase
}

// recipe returns the Dockerfile and the image's tag for base.
func (p *Provider) recipe(base string) (df, tag string) {
	df = dockerfile + p.dockerfileExtra
	return df, tagOf(imageRepo, df, base)
}

func tagOf(repo, df, base string) string {
	sum := sha256.Sum256([]byte(df + "\x00" + base))
	return repo + ":" + hex.EncodeToString(sum[:])[:12]
}

// imageSpec is an image this provider builds: the sandbox image, or the
// desktop image built from it.
type imageSpec struct {
	what          string // "sandbox" or "desktop", the kind of computer it runs
	df, tag, base string
}

func (p *Provider) sandboxImage() imageSpec {
	base := p.base()
	df, tag := p.recipe(base)
	return imageSpec{what: "sandbox", df: df, tag: tag, base: base}
}

func (p *Provider) desktopImage() imageSpec {
	base := p.sandboxImage().tag
	df := desktopDockerfile + p.desktopDockerfileExtra
	return imageSpec{what: "desktop", df: df, tag: tagOf(desktopRepo, df, base), base: base}
}

// images are the images a computer of kind runs on, in build order (a
// desktop's is built from the sandbox's).
func (p *Provider) images(kind computer.Kind) []imageSpec {
	if kind == computer.KindDesktop {
		return []imageSpec{p.sandboxImage(), p.desktopImage()}
	}
	return []imageSpec{p.sandboxImage()}
}

// builds holds the image builds of this process, by engine and tag: at most
// one runs for an image at a time, whichever provider value asked for it
// (the server makes several). An entry stays after its build, so that
// Available can tell a build that failed.
var builds = struct {
	mu sync.Mutex
	m  map[string]*imageBuild
}{m: map[string]*imageBuild{}}

// imageBuild is one build of the sandbox image. Its goroutine (run) is owned
// by the entry in builds: it ends when the engine's build ends, or after
// buildTimeout.
type imageBuild struct {
	what, tag, base string
	done            chan struct{}

	mu       sync.Mutex
	status   string // the last thing the build said
	err      error  // once done
	finished time.Time
}

func (b *imageBuild) setStatus(s string) {
	b.mu.Lock()
	b.status = s
	b.mu.Unlock()
}

func (b *imageBuild) state() (running bool, status string, err error, finished time.Time) {
	select {
	case <-b.done:
	default:
		running = true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return running, b.status, b.err, b.finished
}

// imageState says where one of this provider's images is: built, being
// built, last build failed, or not built (with whether the base is there).
type imageState struct {
	tag, base   string
	built       bool
	building    string // the running build's last message
	failed      error  // the last build's error, if recent
	baseMissing bool
}

// imageState is the state of the sandbox image.
func (p *Provider) imageState(ctx context.Context, cli *client.Client) (imageState, error) {
	return stateOf(ctx, cli, p.sandboxImage())
}

func stateOf(ctx context.Context, cli *client.Client, img imageSpec) (imageState, error) {
	st := imageState{tag: img.tag, base: img.base}
	if _, err := cli.ImageInspect(ctx, img.tag); err == nil {
		st.built = true
		return st, nil
	} else if !client.IsErrNotFound(err) {
		return st, fmt.Errorf("inspect image %s: %w", img.tag, err)
	}
	builds.mu.Lock()
	b := builds.m[cli.DaemonHost()+" "+img.tag]
	builds.mu.Unlock()
	if b != nil {
		running, status, err, finished := b.state()
		switch {
		case running:
			st.building = status
			return st, nil
		case err != nil && time.Since(finished) < failedFor:
			st.failed = err
		}
	}
	if _, err := cli.ImageInspect(ctx, img.base); err != nil {
		if !client.IsErrNotFound(err) {
			return st, fmt.Errorf("inspect base image %s: %w", img.base, err)
		}
		st.baseMissing = true
	}
	return st, nil
}

// Ready reports whether the sandbox image is built and, if not, what its build is doing (or that
// the first sandbox will build it).
func (p *Provider) Ready(ctx context.Context) (bool, string) {
	return p.ReadyKind(ctx, computer.KindSandbox)
}

// ReadyKind reports whether the images of kind are built (a desktop's: the sandbox image and the
// desktop image built from it) and, if not, what is being built or will be.
func (p *Provider) ReadyKind(ctx context.Context, kind computer.Kind) (bool, string) {
	cli, err := p.client()
	if err != nil {
		return false, err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	imgs := p.images(kind)
	var then []string // images built after the one waited on
	for i := len(imgs) - 1; i >= 0; i-- {
		img := imgs[i]
		st, err := stateOf(ctx, cli, img)
		switch {
		case err != nil:
			return false, err.Error()
		case st.built && len(then) == 0:
			return true, fmt.Sprintf("image %s built", st.tag)
		case st.built:
			return false, fmt.Sprintf("image %s to be built from %s (first use; %s)", then[0], st.tag, buildTime(kind))
		case st.building != "":
			msg := fmt.Sprintf("image %s being built from %s: %s", st.tag, st.base, cut(st.building, 160))
			if len(then) > 0 {
				msg += "; then image " + then[0] + " from it"
			}
			return false, msg
		}
		then = append([]string{img.tag}, then...)
	}
	msg := fmt.Sprintf("image %s to be built from %s", imgs[0].tag, imgs[0].base)
	if len(imgs) > 1 {
		msg += fmt.Sprintf(", then image %s from it", imgs[1].tag)
	}
	return false, msg + " (first use; " + buildTime(kind) + ")"
}

// buildTime says how long the build of kind's images may take.
func buildTime(kind computer.Kind) string {
	if kind == computer.KindDesktop {
		return "a minute or more: it installs the X programs"
	}
	return "a few minutes when the base needs packages"
}

var (
	_ computer.Preparer     = (*Provider)(nil)
	_ computer.KindPreparer = (*Provider)(nil)
)

// Prepare makes sure the sandbox image is in the engine: if it is not, it
// builds it (pulling the base image first if the engine lacks it), or waits
// for the build already running. Create calls it; calling it ahead saves
// the first sandbox the wait. When ctx ends first the build goes on, and a
// later call waits for it.
func (p *Provider) Prepare(ctx context.Context) error {
	return p.PrepareKind(ctx, computer.KindSandbox)
}

// PrepareKind makes sure the images of kind are in the engine, as Prepare
// does for the sandbox image: a desktop's are the sandbox image, then the
// desktop image built from it.
func (p *Provider) PrepareKind(ctx context.Context, kind computer.Kind) error {
	cli, err := p.client()
	if err != nil {
		return err
	}
	_, err = p.ensureImages(ctx, cli, kind)
	return err
}

// ensureImages builds kind's images where they are missing, in order, and
// returns the tag of the last, the one its containers run.
func (p *Provider) ensureImages(ctx context.Context, cli *client.Client, kind computer.Kind) (string, error) {
	var tag string
	for _, img := range p.images(kind) {
		var err error
		if tag, err = p.ensureImage(ctx, cli, img); err != nil {
			return "", err
		}
	}
	return tag, nil
}

func (p *Provider) ensureImage(ctx context.Context, cli *client.Client, img imageSpec) (string, error) {
	tag := img.tag
	if _, err := cli.ImageInspect(ctx, tag); err == nil {
		return tag, nil
	} else if !client.IsErrNotFound(err) {
		return "", fmt.Errorf("inspect image %s: %w", tag, err)
	}
	key := cli.DaemonHost() + " " + tag
	builds.mu.Lock()
	b := builds.m[key]
	if b == nil || isDone(b.done) {
		b = &imageBuild{what: img.what, tag: tag, base: img.base, done: make(chan struct{}), status: "starting"}
		builds.m[key] = b
		go b.run(cli, img.df, p.report)
	}
	builds.mu.Unlock()
	select {
	case <-b.done:
		_, _, err, _ := b.state()
		if err != nil {
			return "", err
		}
		return tag, nil
	case <-ctx.Done():
		_, status, _, _ := b.state()
		return "", fmt.Errorf("waiting for the docker %s image %s to be built (it goes on; last: %s): %w", img.what, tag, cut(status, 160), context.Cause(ctx))
	}
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// report passes a build message on to Progress; without one, the start and
// end of a build (milestone) go to the default logger.
func (p *Provider) report(msg string, milestone bool) {
	switch {
	case p.Progress != nil:
		p.Progress(msg)
	case milestone:
		logf("%s", msg)
	}
}

// run builds the image, reporting progress, and records the outcome.
func (b *imageBuild) run(cli *client.Client, df string, report func(string, bool)) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	say := func(msg string, milestone bool) {
		b.setStatus(msg)
		report(msg, milestone)
	}
	say(fmt.Sprintf("docker %s image %s: building from %s (first use)", b.what, b.tag, b.base), true)
	err := buildImage(ctx, cli, df, b.what, b.tag, b.base, say)
	if err != nil {
		err = fmt.Errorf("build docker %s image %s from %s: %w", b.what, b.tag, b.base, err)
		say(err.Error(), true)
	} else {
		say(fmt.Sprintf("docker %s image %s: ready (built in %.1f s)", b.what, b.tag, time.Since(start).Seconds()), true)
	}
	b.mu.Lock()
	b.err = err
	b.finished = time.Now()
	b.mu.Unlock()
	close(b.done)
}

// buildImage pulls base if the engine lacks it, then builds tag (the image of
// computers of kind what) from df.
func buildImage(ctx context.Context, cli *client.Client, df, what, tag, base string, say func(string, bool)) error {
	if _, err := cli.ImageInspect(ctx, base); err != nil {
		if !client.IsErrNotFound(err) {
			return fmt.Errorf("inspect base image: %w", err)
		}
		say(fmt.Sprintf("pulling base image %s", base), false)
		if err := pull(ctx, cli, base); err != nil {
			return fmt.Errorf("base image %s is not in the engine and pulling it failed (docker pull %s, or set AGENTRUN_DOCKER_BASE to an image the engine has): %w",
				base, base, err)
		}
	}
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df)), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if _, err := io.WriteString(tw, df); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	resp, err := cli.ImageBuild(ctx, &tarball, build.ImageBuildOptions{
		Tags:        []string{tag},
		BuildArgs:   map[string]*string{"BASE": &base},
		NetworkMode: "host", // apt reaches the mirrors the host reaches
		Remove:      true,
		ForceRemove: true,
		Labels:      map[string]string{"agentrun.computer": what + "-image", "agentrun.base": base},
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := readMessages(resp.Body, say); err != nil {
		return err
	}
	if _, err := cli.ImageInspect(ctx, tag); err != nil {
		return fmt.Errorf("the build ended without the image: %w", err)
	}
	return nil
}

func pull(ctx context.Context, cli *client.Client, ref string) error {
	ctx, cancel := context.WithTimeoutCause(ctx, pullTimeout, fmt.Errorf("pulling %s took over %v", ref, pullTimeout))
	defer cancel()
	rc, err := cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := readMessages(rc, func(string, bool) {}); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return err
	}
	return nil
}

// message is one JSON object of the engine's build or pull stream.
type message struct {
	Stream      string `json:"stream"`
	Status      string `json:"status"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// readMessages reads a build or pull stream to its end, passing its text on
// line by line, and returns the error it reports.
func readMessages(r io.Reader, say func(string, bool)) error {
	dec := json.NewDecoder(r)
	var last []string // the end of the output, to explain a failure
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read the engine's messages: %w", err)
		}
		if m.Error != "" || m.ErrorDetail != nil {
			msg := m.Error
			if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
				msg = m.ErrorDetail.Message
			}
			if len(last) > 0 {
				msg += "; output: " + strings.Join(last, " | ")
			}
			return errors.New(msg)
		}
		for _, line := range strings.Split(m.Stream+m.Status, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				say(line, false)
				switch {
				case strings.HasPrefix(line, "--->"), strings.HasPrefix(line, "Removing intermediate container"):
					continue // layer ids: no help in an error
				case strings.HasPrefix(line, "Step "):
					last = last[:0] // keep the output of the last step only
				}
				last = append(last, cut(line, 120))
				if len(last) > 8 {
					last = append(last[:1], last[2:]...) // its Step line, and its last lines
				}
			}
		}
	}
}
