package e2etest

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	"agentrun.dev/agentrun/internal/api"
)

const (
	VecSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	VecID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	VecTS     = "1614265330"
	VecBody   = `{"test": 2432232314}`
	VecSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	GhSecret  = "It's a Secret to Everybody"
	GhBody    = "Hello, World!"
	GhSig     = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

type FireAnswer struct {
	Fire     api.TriggerFire `json:"fire"`
	Replayed bool            `json:"replayed"`
	Ignored  bool            `json:"ignored"`
	OK       bool            `json:"ok"`
}

// Hook posts a delivery to /v2/hooks/NAME with the given headers and no API token.
func (e *Env) Hook(name string, h map[string]string, body []byte) (int, []byte) {
	e.T.Helper()
	req, _ := http.NewRequest("POST", e.URL+"/v2/hooks/"+name, bytes.NewReader(body))
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("POST hook %s: %v", name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func StandardHeaders(id string, ts int64, sig string) map[string]string {
	return map[string]string{"webhook-id": id, "webhook-timestamp": strconv.FormatInt(ts, 10), "webhook-signature": sig, "Content-Type": "application/json"}
}
