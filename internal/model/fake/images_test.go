package fake

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
)

const imageScript = `
entries:
  - name: screen
    match: "look at the screen"
    turns:
      - tool_calls: [{name: screenshot}]
      - text: "turn {{turn}}, user {{last_user}}, result {{last_tool_result}}, saw {{last_tool_images}}"
      - text: "turn {{turn}}, user {{last_user}}, result {{last_tool_result}}, saw {{last_tool_images}}"
`

// pngB64 and jpegB64 are base64 images of the given size.
func pngB64(t *testing.T, w, h int) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func jpegB64(t *testing.T, w, h int) string {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h)), nil); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func antImageBlock(mediaType, data string) string {
	return `{"type":"image","source":{"type":"base64","media_type":"` + mediaType + `","data":"` + data + `"}}`
}

func oaiImagePart(url string) string {
	return `{"type":"image_url","image_url":{"url":"` + url + `"}}`
}

// antBody is a Messages request: the first user message, an assistant tool call, then the given
// messages (JSON, comma-separated).
func antBody(rest string) string {
	return `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"please look at the screen"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"screenshot","input":{}}]},` + rest + `]}`
}

func oaiBody(rest string) string {
	return `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"please look at the screen"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"screenshot","arguments":"{}"}}]},` + rest + `]}`
}

// replyText is the text of a non-streaming reply in either format.
func replyText(t *testing.T, format, body string) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string }
		Choices []struct{ Message struct{ Content string } }
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("reply %s: %v", body, err)
	}
	if format == FormatAnthropic && len(r.Content) > 0 {
		return r.Content[0].Text
	}
	if format == FormatOpenAI && len(r.Choices) > 0 {
		return r.Choices[0].Message.Content
	}
	t.Fatalf("reply has no text: %s", body)
	return ""
}

func TestLastToolImages(t *testing.T) {
	t.Parallel()
	big, small, photo := pngB64(t, 1280, 800), pngB64(t, 64, 40), jpegB64(t, 640, 480)
	cases := []struct {
		name, format, body string
		want               string // the reply text
	}{
		{"anthropic one image with text", FormatAnthropic, antBody(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1",
			"content":[{"type":"text","text":"shot"},` + antImageBlock("image/png", big) + `]}]}`),
			"turn 1, user please look at the screen, result shot, saw 1 image: image/png 1280x800"},
		{"anthropic images only, two results", FormatAnthropic, antBody(`{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_1","content":[` + antImageBlock("image/png", small) + `]},
			{"type":"tool_result","tool_use_id":"toolu_2","content":[` + antImageBlock("image/jpeg", photo) + `]}]}`),
			"turn 1, user please look at the screen, result , saw 2 images: image/png 64x40, image/jpeg 640x480"},
		{"anthropic string result", FormatAnthropic, antBody(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"no screen"}]}`),
			"turn 1, user please look at the screen, result no screen, saw no images"},
		{"anthropic later batch without images", FormatAnthropic, antBody(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1",
			"content":[` + antImageBlock("image/png", small) + `]}]},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"type","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"typed"},{"type":"text","text":"and now?"}]}`),
			"turn 2, user and now?, result typed, saw no images"},
		{"openai image message", FormatOpenAI, oaiBody(`{"role":"tool","tool_call_id":"call_1","content":"shot"},
			{"role":"user","content":[{"type":"text","text":"Images returned by tool call call_1:"},` + oaiImagePart("data:image/png;base64,"+big) + `]}`),
			"turn 1, user please look at the screen, result shot, saw 1 image: image/png 1280x800"},
		{"openai two calls, user text after", FormatOpenAI, oaiBody(`{"role":"tool","tool_call_id":"call_1","content":""},
			{"role":"tool","tool_call_id":"call_2","content":"second"},
			{"role":"user","content":[{"type":"text","text":"Images returned by tool call call_1:"},` + oaiImagePart("data:image/png;base64,"+small) + `,
				{"type":"text","text":"Images returned by tool call call_2:"},` + oaiImagePart("data:image/jpeg;base64,"+photo) + `]},
			{"role":"user","content":"what do you see?"}`),
			"turn 1, user what do you see?, result second, saw 2 images: image/png 64x40, image/jpeg 640x480"},
		{"openai no images", FormatOpenAI, oaiBody(`{"role":"tool","tool_call_id":"call_1","content":"no screen"}`),
			"turn 1, user please look at the screen, result no screen, saw no images"},
		{"openai later batch without images", FormatOpenAI, oaiBody(`{"role":"tool","tool_call_id":"call_1","content":"shot"},
			{"role":"user","content":[{"type":"text","text":"Images returned by tool call call_1:"},` + oaiImagePart("data:image/png;base64,"+small) + `]},
			{"role":"assistant","content":null,"tool_calls":[{"id":"call_2","type":"function","function":{"name":"type","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_2","content":"typed"}`),
			"turn 2, user please look at the screen, result typed, saw no images"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, url := start(t, imageScript)
			path, key := "/v1/messages", antKey
			if tc.format == FormatOpenAI {
				path, key = "/v1/chat/completions", oaiKey
			}
			status, body := post(t, url+path, tc.body, key)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			if got := replyText(t, tc.format, body); got != tc.want {
				t.Errorf("reply = %q\nwant    %q", got, tc.want)
			}
			calls := srv.Calls()
			wantTurn := int(tc.want[len("turn ")] - '0')
			if len(calls) != 1 || calls[0].Entry != "screen" || calls[0].Turn != wantTurn || calls[0].FirstUser != "please look at the screen" {
				t.Errorf("calls = %+v", calls)
			}
		})
	}
}

// The OpenAI message of images is not a user message: a conversation whose only "user" message after
// the first is that one keeps its entry, turn and {{last_user}}, and so does the same request without it.
func TestOpenAIImageMessageLeavesTurnAlone(t *testing.T) {
	t.Parallel()
	_, url := start(t, imageScript)
	with := oaiBody(`{"role":"tool","tool_call_id":"call_1","content":"shot"},
		{"role":"user","content":[{"type":"text","text":"Images returned by tool call call_1:"},` + oaiImagePart("data:image/png;base64,"+pngB64(t, 8, 8)) + `]}`)
	without := oaiBody(`{"role":"tool","tool_call_id":"call_1","content":"shot"}`)
	_, a := post(t, url+"/chat/completions", with, oaiKey)
	_, b := post(t, url+"/chat/completions", without, oaiKey)
	if got, want := replyText(t, FormatOpenAI, a), "turn 1, user please look at the screen, result shot, saw 1 image: image/png 8x8"; got != want {
		t.Errorf("with images: %q, want %q", got, want)
	}
	if got, want := replyText(t, FormatOpenAI, b), "turn 1, user please look at the screen, result shot, saw no images"; got != want {
		t.Errorf("without images: %q, want %q", got, want)
	}

	// A conversation that opens with tool output: the image message does not become the first user
	// message (which would pick an entry by the header text).
	status, body := post(t, url+"/chat/completions", `{"model":"m","messages":[
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"screenshot","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"shot"},
		{"role":"user","content":[{"type":"text","text":"Images returned by tool call call_1: look at the screen"},`+oaiImagePart("data:image/png;base64,"+pngB64(t, 8, 8))+`]},
		{"role":"user","content":"please look at the screen"}]}`, oaiKey)
	if status != 200 || replyText(t, FormatOpenAI, body) != "turn 1, user please look at the screen, result shot, saw 1 image: image/png 8x8" {
		t.Errorf("opening with tool output: %d %s", status, body)
	}
}

// Images count in the default input estimate, as width × height / 750 tokens each.
func TestImagesInInputEstimate(t *testing.T) {
	t.Parallel()
	_, url := start(t, imageScript)
	usage := func(body string) float64 {
		status, reply := post(t, url+"/v1/messages", body, antKey)
		if status != 200 {
			t.Fatalf("status %d: %s", status, reply)
		}
		var r struct {
			Usage struct {
				InputTokens float64 `json:"input_tokens"`
			}
		}
		_ = json.Unmarshal([]byte(reply), &r)
		return r.Usage.InputTokens
	}
	plain := usage(antBody(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"shot"}]}]}`))
	shot := usage(antBody(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1",
		"content":[{"type":"text","text":"shot"},` + antImageBlock("image/png", pngB64(t, 1500, 1000)) + `]}]}`))
	if shot-plain != 2000 {
		t.Errorf("input tokens %v with the image, %v without: want 2000 more", shot, plain)
	}
}

func TestBadImages(t *testing.T) {
	t.Parallel()
	jpg := jpegB64(t, 4, 4)
	garbage := base64.StdEncoding.EncodeToString([]byte("this is not a picture at all"))
	cases := []struct {
		name, format, body, want string
	}{
		{"anthropic bad base64", FormatAnthropic, antBody(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[` +
			antImageBlock("image/png", "!!!not base64") + `]}]}`), "messages.2.content.0.tool_result.content.0.image.source: invalid base64 data"},
		{"anthropic undecodable", FormatAnthropic, antBody(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[` +
			antImageBlock("image/png", garbage) + `]}]}`), "could not process image"},
		{"anthropic wrong media type", FormatAnthropic, antBody(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[` +
			antImageBlock("image/png", jpg) + `]}]}`), "does not match the provided media type image/png"},
		{"anthropic unsupported media type", FormatAnthropic, antBody(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[` +
			antImageBlock("image/bmp", jpg) + `]}]}`), `media type "image/bmp" is not supported`},
		{"anthropic url source", FormatAnthropic, antBody(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[
			{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}]}`), "takes only base64 images"},
		{"anthropic bad image in a user message", FormatAnthropic, antBody(`{"role":"user","content":[` + antImageBlock("image/jpeg", garbage) + `]}`),
			"messages.2.content.0.image.source: could not process image"},
		{"openai bad base64", FormatOpenAI, oaiBody(`{"role":"tool","tool_call_id":"call_1","content":""},
			{"role":"user","content":[{"type":"text","text":"Images returned by tool call call_1:"},` + oaiImagePart("data:image/png;base64,%%%") + `]}`),
			"messages[4].content[1].image_url: invalid base64 data"},
		{"openai undecodable", FormatOpenAI, oaiBody(`{"role":"tool","tool_call_id":"call_1","content":""},
			{"role":"user","content":[` + oaiImagePart("data:image/jpeg;base64,"+garbage) + `]}`), "could not process image"},
		{"openai not a data url", FormatOpenAI, oaiBody(`{"role":"tool","tool_call_id":"call_1","content":""},
			{"role":"user","content":[` + oaiImagePart("https://example.com/a.png") + `]}`), "only as data: URLs"},
		{"openai data url without base64", FormatOpenAI, oaiBody(`{"role":"tool","tool_call_id":"call_1","content":""},
			{"role":"user","content":[` + oaiImagePart("data:image/png,abc") + `]}`), "invalid image data URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, url := start(t, imageScript)
			path, key := "/v1/messages", antKey
			if tc.format == FormatOpenAI {
				path, key = "/chat/completions", oaiKey
			}
			status, body := post(t, url+path, tc.body, key)
			// Each vendor's error shape: Anthropic {"type":"error","error":{"type","message"}}, OpenAI
			// {"error":{"message","type","param","code"}}.
			var e struct {
				Type  string
				Error struct {
					Type, Message string
					Code          *string
				}
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("%d %s: %v", status, body, err)
			}
			shapeOK := e.Type == "error" && e.Error.Code == nil
			if tc.format == FormatOpenAI {
				shapeOK = e.Type == "" && e.Error.Code != nil && *e.Error.Code == "invalid_image_format"
			}
			if status != 400 || !shapeOK || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tc.want) {
				t.Errorf("%d %s\nwant 400, invalid_request_error in the %s shape, and %q", status, body, tc.format, tc.want)
			}
			if c := srv.Calls(); len(c) != 1 || c[0].Status != 400 || c[0].EntryIndex != -1 || !strings.Contains(c[0].Error, tc.want) {
				t.Errorf("calls = %+v", c)
			}
		})
	}
}

func TestDescribeImages(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   []imageInfo
		want string
	}{
		{nil, "no images"},
		{[]imageInfo{{"image/png", 1280, 800}}, "1 image: image/png 1280x800"},
		{[]imageInfo{{"image/png", 1280, 800}, {"image/jpeg", 640, 480}}, "2 images: image/png 1280x800, image/jpeg 640x480"},
	}
	for _, tc := range cases {
		if got := describeImages(tc.in); got != tc.want {
			t.Errorf("describeImages(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
