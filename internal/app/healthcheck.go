package app

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// newHealthcheckCmd is `agentrun healthcheck [URL]`: exit 0 when URL (a /healthz or /readyz)
// answers 200 within 5 s, else 1 with the answer. A container image has no curl: its
// HEALTHCHECK runs this.
func newHealthcheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "healthcheck [URL]",
		Short: "Exit 0 when URL (default http://127.0.0.1:7340/healthz) answers 200: for container health checks",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			url := "http://127.0.0.1:7340/healthz"
			if len(args) == 1 {
				url = args[0]
			}
			resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
			if err != nil {
				return fmt.Errorf("healthcheck %s: %w", url, err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("healthcheck %s: HTTP %d: %s", url, resp.StatusCode, strings.TrimSpace(string(b)))
			}
			fmt.Fprint(os.Stdout, string(b))
			return nil
		},
	}
}
