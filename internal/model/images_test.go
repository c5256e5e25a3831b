package model_test

import (
	"bytes"
	"image"
	"image/jpeg"
	"image/png"
	"testing"

	"agentrun.dev/agentrun/internal/model"
)

const screenScript = `
entries:
  - name: desktop
    match: "use the desktop"
    turns:
      - tool_calls: [{name: screenshot}, {name: zoom}]
      - tool_calls: [{name: click, input: {saw: "{{last_tool_images}}"}}]
      - text: "turn {{turn}}; you said {{last_user}}; last result {{last_tool_result}}; {{last_tool_images}}"
`

func encodeImage(t *testing.T, format string, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	var err error
	if format == "png" {
		err = png.Encode(&buf, img)
	} else {
		err = jpeg.Encode(&buf, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Screenshots in tool results reach the scripted server in each vendor's wire format and come back in
// {{last_tool_images}}; the OpenAI message that carries them moves neither the turn nor {{last_user}}.
func TestToolResultImages(t *testing.T) {
	t.Parallel()
	screen, zoomed := encodeImage(t, "png", 1280, 800), encodeImage(t, "jpeg", 320, 200)
	eachProvider(t, func(t *testing.T, pc providerCase, stream bool) {
		srv, url := startFake(t, screenScript)
		p := pc.new(url, "k")
		req := &model.Request{Model: "m", Stream: stream, Messages: []model.Message{user("Please use the desktop.")}}
		r0 := complete(t, p, req)
		if len(r0.Content) != 2 {
			t.Fatalf("turn 0 = %+v", r0.Content)
		}
		shot, zoom := r0.Content[0], r0.Content[1]
		req.Messages = append(req.Messages, model.Message{Role: "assistant", Content: r0.Content}, model.Message{Role: "user", Content: []model.Block{
			{Type: model.BlockToolResult, ToolUseID: shot.ID, Content: "the screen", Images: []model.Image{{MediaType: "image/png", Data: screen}}},
			{Type: model.BlockToolResult, ToolUseID: zoom.ID, Images: []model.Image{{MediaType: "image/jpeg", Data: zoomed}}},
		}})
		r1 := complete(t, p, req)
		if len(r1.Content) != 1 || r1.Content[0].Name != "click" {
			t.Fatalf("turn 1 = %+v", r1.Content)
		}
		jsonEqual(t, r1.Content[0].Input, `{"saw":"2 images: image/png 1280x800, image/jpeg 320x200"}`)

		// The next batch has no images; the user adds a line after it.
		req.Messages = append(req.Messages, model.Message{Role: "assistant", Content: r1.Content}, model.Message{Role: "user", Content: []model.Block{
			{Type: model.BlockToolResult, ToolUseID: r1.Content[0].ID, Content: "clicked"},
			{Type: model.BlockText, Text: "thanks"},
		}})
		r2 := complete(t, p, req)
		if got, want := r2.Content[0].Text, "turn 2; you said thanks; last result clicked; no images"; got != want {
			t.Errorf("turn 2 = %q, want %q", got, want)
		}
		calls := srv.Calls()
		if len(calls) != 3 {
			t.Fatalf("calls = %+v", calls)
		}
		for i, c := range calls {
			if c.Entry != "desktop" || c.Turn != i || c.Status != 200 || c.FirstUser != "Please use the desktop." {
				t.Errorf("call %d = %+v", i, c)
			}
		}
	})
}
