package agent

import (
	"bytes"
	"image"
	"image/png"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/model"
)

func pngOf(t *testing.T, w, h int) model.Image {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return model.Image{MediaType: "image/png", Data: b.Bytes()}
}

// A long desktop session sends only its latest pictures; older results say theirs were left
// out, and the conversation kept by the loop is not changed.
func TestLastImages(t *testing.T) {
	t.Parallel()
	shot := pngOf(t, 8, 8)
	result := func(id string, n int) model.Message {
		b := model.Block{Type: model.BlockToolResult, ToolUseID: id, Content: "shot " + id}
		for range n {
			b.Images = append(b.Images, shot)
		}
		return model.Message{Role: "user", Content: []model.Block{b}}
	}
	conv := []model.Message{{Role: "user", Content: []model.Block{{Type: model.BlockText, Text: "go"}}},
		result("a", 1), result("b", 2), result("c", 1), result("d", 1)}
	got := lastImages(conv, 3)
	want := map[string]int{"a": 0, "b": 1, "c": 1, "d": 1}
	for _, m := range got[1:] {
		b := m.Content[0]
		if len(b.Images) != want[b.ToolUseID] {
			t.Errorf("result %s carries %d images, want %d", b.ToolUseID, len(b.Images), want[b.ToolUseID])
		}
		if left := strings.Contains(b.Content, "left out"); left != (b.ToolUseID == "a" || b.ToolUseID == "b") {
			t.Errorf("result %s says %q", b.ToolUseID, b.Content)
		}
	}
	if len(conv[2].Content[0].Images) != 2 || strings.Contains(conv[1].Content[0].Content, "left out") {
		t.Errorf("lastImages changed the conversation it was given: %+v", conv[1:3])
	}
	if few := lastImages(conv[:3], 3); &few[0] != &conv[0] {
		t.Errorf("with no more than 3 images the conversation is sent as it is")
	}
}

// A picture counts in a call's worst case by its size, not by its bytes.
func TestInputBoundImages(t *testing.T) {
	t.Parallel()
	shot := pngOf(t, 1280, 800)
	req := &model.Request{Model: "m", Messages: []model.Message{{Role: "user", Content: []model.Block{
		{Type: model.BlockToolResult, ToolUseID: "x", Content: "shot", Images: []model.Image{shot}}}}}}
	plain := &model.Request{Model: "m", Messages: []model.Message{{Role: "user", Content: []model.Block{
		{Type: model.BlockToolResult, ToolUseID: "x", Content: "shot"}}}}}
	// 1280×800/750 = 1366 (Anthropic) beats 85 + 170×3×2 = 1105 (OpenAI).
	if got, want := inputBound(req)-inputBound(plain), int64(1366); got != want {
		t.Errorf("a 1280x800 screenshot adds %d tokens to the worst case, want %d", got, want)
	}
	if len(req.Messages[0].Content[0].Images) != 1 {
		t.Errorf("inputBound took the picture out of the request it was given")
	}
	if got := imageTokens(model.Image{MediaType: "image/png", Data: []byte("not a png")}); got != 9 {
		t.Errorf("an unreadable picture counts %d tokens, want its 9 bytes", got)
	}
}
