// Package webhooks holds the end-to-end tests of outbound webhooks (docs/webhooks.md): the real
// binary delivers to a receiver written with the standardwebhooks npm library, which verifies
// every delivery.
package webhooks

import (
	"testing"

	"agentrun.dev/agentrun/e2e/e2etest"
)

// TestMain makes this test binary also the agentrun binary the tests start (e2etest.Main).
func TestMain(m *testing.M) { e2etest.Main(m) }
