package computer

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	"agentrun.dev/agentrun/internal/catalog"
)

// runDesktop runs one of a desktop's own tools (its sandbox tools go through runSandbox).
func runDesktop(ctx context.Context, d Desktop, name string, input any) (Result, error) {
	w, h := d.Size()
	point := func(x, y int) error {
		if x < 0 || y < 0 || x >= w || y >= h {
			return Agentf("(%d, %d) is off the screen: x must be 0..%d and y 0..%d", x, y, w-1, h-1)
		}
		return nil
	}
	switch in := input.(type) {
	case *catalog.DesktopScreenshot:
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
	case *catalog.DesktopClick:
		if err := point(in.X, in.Y); err != nil {
			return Result{}, err
		}
		if in.Button == "" {
			in.Button = "left"
		}
		count, what := 1, "clicked"
		if in.Double {
			count, what = 2, "double-clicked"
		}
		if err := d.Mouse(ctx, in.X, in.Y, in.Button, count); err != nil {
			return Result{}, err
		}
		return Result{Content: fmt.Sprintf("%s the %s button at (%d, %d); take a screenshot to see what it did", what, in.Button, in.X, in.Y)}, nil
	case *catalog.DesktopMove:
		if err := point(in.X, in.Y); err != nil {
			return Result{}, err
		}
		if err := d.Mouse(ctx, in.X, in.Y, "", 0); err != nil {
			return Result{}, err
		}
		return Result{Content: fmt.Sprintf("the mouse is at (%d, %d)", in.X, in.Y)}, nil
	case *catalog.DesktopDrag:
		if err := point(in.X, in.Y); err != nil {
			return Result{}, err
		}
		if err := point(in.ToX, in.ToY); err != nil {
			return Result{}, err
		}
		if err := d.Drag(ctx, in.X, in.Y, in.ToX, in.ToY); err != nil {
			return Result{}, err
		}
		return Result{Content: fmt.Sprintf("dragged from (%d, %d) to (%d, %d)", in.X, in.Y, in.ToX, in.ToY)}, nil
	case *catalog.DesktopScroll:
		if err := point(in.X, in.Y); err != nil {
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
		if err := d.Scroll(ctx, in.X, in.Y, in.Direction, clicks); err != nil {
			return Result{}, err
		}
		return Result{Content: fmt.Sprintf("scrolled %s %d notches at (%d, %d)", in.Direction, clicks, in.X, in.Y)}, nil
	case *catalog.DesktopType:
		if in.Text == "" {
			return Result{}, Agentf("desktop_type needs \"text\" (a non-empty string)")
		}
		if err := d.TypeText(ctx, in.Text); err != nil {
			return Result{}, err
		}
		return Result{Content: fmt.Sprintf("typed %d characters", len([]rune(in.Text)))}, nil
	case *catalog.DesktopKey:
		if strings.TrimSpace(in.Keys) == "" {
			return Result{}, Agentf("desktop_key needs \"keys\", e.g. \"Return\" or \"ctrl+s\"")
		}
		if err := d.Keys(ctx, in.Keys); err != nil {
			return Result{}, err
		}
		return Result{Content: "pressed " + strings.Join(strings.Fields(in.Keys), ", then ")}, nil
	}
	return Result{}, fmt.Errorf("desktop tool %s: input is a %T", name, input)
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
