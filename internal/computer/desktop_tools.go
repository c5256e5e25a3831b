package computer

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// runDesktop runs one of a desktop's own tools (its sandbox tools go through runSandbox).
func runDesktop(ctx context.Context, d Desktop, name string, input json.RawMessage) (Result, error) {
	w, h := d.Size()
	point := func(x, y *int, what string) error {
		if x == nil || y == nil {
			return Agentf("%s needs \"x\" and \"y\" (integers, pixels of the screen)", what)
		}
		if *x < 0 || *y < 0 || *x >= w || *y >= h {
			return Agentf("(%d, %d) is off the screen: x must be 0..%d and y 0..%d", *x, *y, w-1, h-1)
		}
		return nil
	}
	switch name {
	case "desktop_screenshot":
		var in struct {
			Path string `json:"path"`
		}
		if msg := decode(input, &in); msg != "" {
			return Result{}, Agentf("%s", msg)
		}
		p, err := shotPath(ctx, d, in.Path)
		if err != nil {
			return Result{}, err
		}
		png, err := d.Shot(ctx)
		if err != nil {
			return Result{}, err
		}
		if err := d.WriteFile(ctx, p, png); err != nil {
			return Result{}, err
		}
		return Result{Content: fmt.Sprintf("screenshot of the %dx%d screen, saved in the run folder at %s", w, h, p), Images: []string{p}}, nil
	case "desktop_click":
		var in struct {
			X      *int   `json:"x"`
			Y      *int   `json:"y"`
			Button string `json:"button"`
			Double bool   `json:"double"`
		}
		if msg := decode(input, &in); msg != "" {
			return Result{}, Agentf("%s", msg)
		}
		if err := point(in.X, in.Y, "desktop_click"); err != nil {
			return Result{}, err
		}
		if in.Button == "" {
			in.Button = "left"
		}
		count, what := 1, "clicked"
		if in.Double {
			count, what = 2, "double-clicked"
		}
		if err := d.Mouse(ctx, *in.X, *in.Y, in.Button, count); err != nil {
			return Result{}, err
		}
		return Result{Content: fmt.Sprintf("%s the %s button at (%d, %d); take a screenshot to see what it did", what, in.Button, *in.X, *in.Y)}, nil
	case "desktop_move":
		var in struct {
			X *int `json:"x"`
			Y *int `json:"y"`
		}
		if msg := decode(input, &in); msg != "" {
			return Result{}, Agentf("%s", msg)
		}
		if err := point(in.X, in.Y, "desktop_move"); err != nil {
			return Result{}, err
		}
		if err := d.Mouse(ctx, *in.X, *in.Y, "", 0); err != nil {
			return Result{}, err
		}
		return Result{Content: fmt.Sprintf("the mouse is at (%d, %d)", *in.X, *in.Y)}, nil
	case "desktop_drag":
		var in struct {
			X   *int `json:"x"`
			Y   *int `json:"y"`
			ToX *int `json:"to_x"`
			ToY *int `json:"to_y"`
		}
		if msg := decode(input, &in); msg != "" {
			return Result{}, Agentf("%s", msg)
		}
		if err := point(in.X, in.Y, "desktop_drag"); err != nil {
			return Result{}, err
		}
		if in.ToX == nil || in.ToY == nil {
			return Result{}, Agentf("desktop_drag needs \"to_x\" and \"to_y\" (integers, where to release the button)")
		}
		if err := point(in.ToX, in.ToY, "desktop_drag"); err != nil {
			return Result{}, err
		}
		if err := d.Drag(ctx, *in.X, *in.Y, *in.ToX, *in.ToY); err != nil {
			return Result{}, err
		}
		return Result{Content: fmt.Sprintf("dragged from (%d, %d) to (%d, %d)", *in.X, *in.Y, *in.ToX, *in.ToY)}, nil
	case "desktop_scroll":
		var in struct {
			X         *int   `json:"x"`
			Y         *int   `json:"y"`
			Direction string `json:"direction"`
			Clicks    *int   `json:"clicks"`
		}
		if msg := decode(input, &in); msg != "" {
			return Result{}, Agentf("%s", msg)
		}
		if err := point(in.X, in.Y, "desktop_scroll"); err != nil {
			return Result{}, err
		}
		clicks := 3
		if in.Clicks != nil {
			if *in.Clicks < 1 || *in.Clicks > 50 {
				return Result{}, Agentf("clicks must be between 1 and 50, got %d", *in.Clicks)
			}
			clicks = *in.Clicks
		}
		switch in.Direction {
		case "up", "down", "left", "right":
		default:
			return Result{}, Agentf("direction must be up, down, left or right, got %q", in.Direction)
		}
		if err := d.Scroll(ctx, *in.X, *in.Y, in.Direction, clicks); err != nil {
			return Result{}, err
		}
		return Result{Content: fmt.Sprintf("scrolled %s %d notches at (%d, %d)", in.Direction, clicks, *in.X, *in.Y)}, nil
	case "desktop_type":
		var in struct {
			Text *string `json:"text"`
		}
		if msg := decode(input, &in); msg != "" {
			return Result{}, Agentf("%s", msg)
		}
		if in.Text == nil || *in.Text == "" {
			return Result{}, Agentf("desktop_type needs \"text\" (a non-empty string)")
		}
		if err := d.TypeText(ctx, *in.Text); err != nil {
			return Result{}, err
		}
		return Result{Content: fmt.Sprintf("typed %d characters", len([]rune(*in.Text)))}, nil
	case "desktop_key":
		var in struct {
			Keys string `json:"keys"`
		}
		if msg := decode(input, &in); msg != "" {
			return Result{}, Agentf("%s", msg)
		}
		if strings.TrimSpace(in.Keys) == "" {
			return Result{}, Agentf("desktop_key needs \"keys\", e.g. \"Return\" or \"ctrl+s\"")
		}
		if err := d.Keys(ctx, in.Keys); err != nil {
			return Result{}, err
		}
		return Result{Content: "pressed " + strings.Join(strings.Fields(in.Keys), ", then ")}, nil
	}
	return Result{}, fmt.Errorf("unknown desktop tool %s", name)
}

// shotPath checks a screenshot's path in the run folder, or picks the next free
// screenshots/N.png.
func shotPath(ctx context.Context, d Desktop, p string) (string, error) {
	if p != "" {
		clean := path.Clean(strings.TrimPrefix(p, "/workspace/"))
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || !strings.HasSuffix(clean, ".png") {
			return "", Agentf("path must be a .png file in the run folder (relative, e.g. screenshots/login.png), got %q", p)
		}
		return clean, nil
	}
	r, err := d.Exec(ctx, `n=1; while [ -e "screenshots/$n.png" ]; do n=$((n+1)); done; echo "$n"`, ExecOptions{})
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
	if r.ExitCode != 0 || err != nil {
		return "", fmt.Errorf("pick a screenshot's name: exit %d: %s", r.ExitCode, r.Stderr)
	}
	return fmt.Sprintf("screenshots/%d.png", n), nil
}
