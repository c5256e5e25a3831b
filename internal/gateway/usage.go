package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"

	"agentrun.dev/agentrun/internal/model"
)

// Summary is what the gateway reads from a response: the model that answered, why it stopped, the
// usage, and the text it said (an approval shows it as the call's reason); nothing else of the body
// is interpreted.
type Summary struct {
	Model      string
	StopReason string
	Usage      model.Usage
	Text       string
}

// Summarize reads a response body of wire, an SSE stream or one JSON object.
func Summarize(wire Wire, body []byte) Summary {
	var s Summary
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
			if !ok {
				continue
			}
			data = bytes.TrimSpace(data)
			if len(data) == 0 || data[0] != '{' {
				continue // [DONE]
			}
			s.event(wire, data)
		}
		return s
	}
	s.object(wire, body)
	return s
}

type antUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreation            *struct {
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

// apply sets the counts u reports (a stream's message_delta repeats or completes message_start's).
func (u *antUsage) apply(dst *model.Usage) {
	if u == nil {
		return
	}
	set := func(p *int64, d *int64) {
		if p != nil {
			*d = *p
		}
	}
	set(u.InputTokens, &dst.InputTokens)
	set(u.OutputTokens, &dst.OutputTokens)
	set(u.CacheCreationInputTokens, &dst.CacheCreationInputTokens)
	set(u.CacheReadInputTokens, &dst.CacheReadInputTokens)
	if u.CacheCreation != nil {
		dst.CacheCreation1hInputTokens = u.CacheCreation.Ephemeral1h
	}
}

type oaiUsage struct {
	// Responses
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	InputDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	// Chat Completions
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	PromptDetails    struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// neutral is the usage in Anthropic's terms: input without the cached part.
func (u *oaiUsage) neutral() model.Usage {
	in, cached, out, reason := u.InputTokens, u.InputDetails.CachedTokens, u.OutputTokens, u.OutputDetails.ReasoningTokens
	if u.PromptTokens > 0 || u.CompletionTokens > 0 {
		in, cached, out, reason = u.PromptTokens, u.PromptDetails.CachedTokens, u.CompletionTokens, u.CompletionDetails.ReasoningTokens
	}
	return model.Usage{InputTokens: max(in-cached, 0), CacheReadInputTokens: cached, OutputTokens: out, ReasoningTokens: reason}
}

func (s *Summary) event(wire Wire, data []byte) {
	switch wire {
	case WireAnthropic:
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Model string    `json:"model"`
				Usage *antUsage `json:"usage"`
			} `json:"message"`
			Delta struct {
				StopReason string `json:"stop_reason"`
				Type       string `json:"type"`
				Text       string `json:"text"`
			} `json:"delta"`
			Usage *antUsage `json:"usage"`
		}
		if json.Unmarshal(data, &ev) != nil {
			return
		}
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" {
				s.Text += ev.Delta.Text
			}
		case "message_start":
			s.Model = ev.Message.Model
			ev.Message.Usage.apply(&s.Usage)
		case "message_delta":
			if ev.Delta.StopReason != "" {
				s.StopReason = ev.Delta.StopReason
			}
			ev.Usage.apply(&s.Usage)
		}
	case WireResponses:
		var ev struct {
			Type     string `json:"type"`
			Delta    string `json:"delta"`
			Response struct {
				Model  string    `json:"model"`
				Status string    `json:"status"`
				Usage  *oaiUsage `json:"usage"`
			} `json:"response"`
		}
		if json.Unmarshal(data, &ev) != nil {
			return
		}
		if ev.Type == "response.output_text.delta" {
			s.Text += ev.Delta
		}
		if ev.Response.Model == "" {
			return
		}
		s.Model = ev.Response.Model
		if ev.Response.Usage != nil {
			s.Usage, s.StopReason = ev.Response.Usage.neutral(), ev.Response.Status
		}
	case WireChat:
		var ch struct {
			Model   string `json:"model"`
			Choices []struct {
				FinishReason string `json:"finish_reason"`
				Delta        struct {
					Content string `json:"content"`
				} `json:"delta"`
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
			Usage *oaiUsage `json:"usage"`
		}
		if json.Unmarshal(data, &ch) != nil {
			return
		}
		if ch.Model != "" {
			s.Model = ch.Model
		}
		for _, c := range ch.Choices {
			s.Text += c.Delta.Content + c.Message.Content
			if c.FinishReason != "" {
				s.StopReason = c.FinishReason
			}
		}
		if ch.Usage != nil {
			s.Usage = ch.Usage.neutral()
		}
	}
}

func (s *Summary) object(wire Wire, body []byte) {
	switch wire {
	case WireAnthropic:
		var r struct {
			Model      string    `json:"model"`
			StopReason string    `json:"stop_reason"`
			Usage      *antUsage `json:"usage"`
			Content    []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal(body, &r) == nil {
			s.Model, s.StopReason = r.Model, r.StopReason
			r.Usage.apply(&s.Usage)
			for _, b := range r.Content {
				if b.Type == "text" {
					s.Text += b.Text
				}
			}
		}
	case WireResponses:
		var r struct {
			Model  string    `json:"model"`
			Status string    `json:"status"`
			Usage  *oaiUsage `json:"usage"`
		}
		if json.Unmarshal(body, &r) == nil {
			s.Model, s.StopReason = r.Model, r.Status
			if r.Usage != nil {
				s.Usage = r.Usage.neutral()
			}
		}
	case WireChat:
		s.event(WireChat, body)
	}
}
