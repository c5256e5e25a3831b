package app

import (
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/agent"
)

// A runner's options are refused with the flag named, and --max-lag 0 means the check is off.
func TestRunnerOptionsMaxLag(t *testing.T) {
	for _, c := range []struct {
		lag     time.Duration
		wantErr string
		want    time.Duration
	}{
		{lag: 50 * time.Millisecond, want: 50 * time.Millisecond},
		{lag: 0, want: -1},
		{lag: -5 * time.Millisecond, wantErr: "--max-lag -5ms"},
	} {
		o := &runnerOptions{Router: agent.RouterModel, MaxLag: c.lag}
		err := o.validate()
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("--max-lag %s: err = %v, want one naming %q", c.lag, err, c.wantErr)
			}
			continue
		}
		if err != nil || o.maxLag() != c.want {
			t.Errorf("--max-lag %s: err = %v, runner's MaxLag %s; want nil, %s", c.lag, err, o.maxLag(), c.want)
		}
	}
}
