// Package otel holds the end-to-end tests of the OpenTelemetry traces and metrics
// (docs/observability.md): the real binary exports over OTLP to a receiver that decodes with
// OTLP's own protobuf types (HTTP/protobuf and gRPC), and the tests read the spans it got.
package otel

import (
	"testing"

	"agentrun.dev/agentrun/e2e/e2etest"
)

// TestMain makes this test binary also the agentrun binary the tests start (e2etest.Main).
func TestMain(m *testing.M) { e2etest.Main(m) }
