package agent

import (
	"bytes"
	"fmt"
	"image"
	_ "image/jpeg" // DecodeConfig of a tool result's JPEG
	_ "image/png"  // and of its PNG

	"agentrun.dev/agentrun/internal/model"
)

// maxImages is how many of the conversation's pictures (a desktop's screenshots) a model call
// carries: the latest ones. Older ones are replaced by a line naming them, so a long session on
// a desktop does not send every screen it ever saw (each costs about a thousand input tokens).
const maxImages = 3

// lastImages returns conv with the pictures of all but the last n tool results that have any
// replaced by a note. conv itself is not changed; the result is a pure function of conv, so a
// replayed call asks the same.
func lastImages(conv []model.Message, n int) []model.Message {
	seen := 0
	var out []model.Message
	copied := map[int]bool{} // messages whose blocks out holds a copy of
	for i := len(conv) - 1; i >= 0; i-- {
		m := conv[i]
		for j := len(m.Content) - 1; j >= 0; j-- {
			b := m.Content[j]
			if len(b.Images) == 0 {
				continue
			}
			if seen+len(b.Images) <= n {
				seen += len(b.Images)
				continue
			}
			if out == nil {
				out = append([]model.Message(nil), conv...)
			}
			if !copied[i] {
				copied[i] = true
				out[i].Content = append([]model.Block(nil), m.Content...)
			}
			keep := n - seen
			if keep < 0 {
				keep = 0
			}
			seen += len(b.Images)
			dropped := len(b.Images) - keep
			b.Images = append([]model.Image(nil), b.Images[len(b.Images)-keep:]...)
			b.Content += fmt.Sprintf("\n(%d image(s) of this result left out: only the latest %d images of the conversation are sent)", dropped, n)
			out[i].Content[j] = b
		}
	}
	if out == nil {
		return conv
	}
	return out
}

// imageTokens bounds the input tokens of a picture for the worst case of a call. Vendors scale
// a picture down before counting, so its own size bounds the count: Anthropic's is about
// width×height/750, OpenAI's 85 plus 170 per 512-pixel tile; the larger of the two is taken. A
// picture whose size cannot be read counts as its bytes, as text does.
func imageTokens(img model.Image) int64 {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(img.Data))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return int64(len(img.Data))
	}
	w, h := int64(cfg.Width), int64(cfg.Height)
	anthropic := (w*h + 749) / 750
	openai := 85 + 170*((w+511)/512)*((h+511)/512)
	return max(anthropic, openai)
}

// withoutImages returns the request with its pictures taken out, and the tokens they bound.
func withoutImages(req *model.Request) (*model.Request, int64) {
	var tokens int64
	var msgs []model.Message
	copied := map[int]bool{}
	for i, m := range req.Messages {
		for j, b := range m.Content {
			if len(b.Images) == 0 {
				continue
			}
			if msgs == nil {
				msgs = append([]model.Message(nil), req.Messages...)
			}
			if !copied[i] {
				copied[i] = true
				msgs[i].Content = append([]model.Block(nil), m.Content...)
			}
			for _, img := range b.Images {
				tokens += imageTokens(img)
			}
			msgs[i].Content[j].Images = nil
		}
	}
	if msgs == nil {
		return req, 0
	}
	r := *req
	r.Messages = msgs
	return &r, tokens
}
