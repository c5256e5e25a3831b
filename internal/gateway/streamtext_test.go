package gateway

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

func TestStreamTextSeesEachWiresText(t *testing.T) {
	for wire, body := range map[Wire]string{
		WireAnthropic: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n" +
			"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\r\n\r\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n",
		WireChat: "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\ndata: [DONE]\n\n",
		WireResponses: "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hel\"}\n\n" +
			"data: {\"type\":\"response.output_text.delta\",\"delta\":\"lo\"}\n\n",
	} {
		var got []string
		r := StreamText(wire, iotest.OneByteReader(bytes.NewReader([]byte(body))), func(s string) { got = append(got, s) })
		out, err := io.ReadAll(r)
		if err != nil || string(out) != body {
			t.Errorf("%s: the bytes changed (%v)", wire, err)
		}
		if len(got) != 2 || got[0] != "Hel" || got[1] != "lo" {
			t.Errorf("%s: text pieces %q", wire, got)
		}
	}
}
