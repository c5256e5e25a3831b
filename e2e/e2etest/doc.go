// Package e2etest is what the end-to-end test packages under e2e/ share: the test binary as the
// agentrun binary (Main, which each package's TestMain calls), a test's world (Env: a data folder,
// the scripted model server and the real server process, driven through the CLI and the HTTP API),
// a PostgreSQL cluster of servers and runners, the browser of the console tests, the checks that
// skip when a tool is missing (NeedBwrap, NeedDockerBase, ...), the harness CLIs installed once per
// test process (InstalledHarness) and the scenarios every harness runs (HarnessCase,
// HarnessQuickstart, ...), and the scripts and helpers more than one area's tests use. The scripted
// model server (internal/model/fake) is the only stand-in: everything else is the real thing, and
// crash tests kill the server with SIGKILL.
//
// With AGENTRUN_E2E_OPENAPI_LOG=FILE every answer a test of any of these packages receives
// through http.DefaultClient is held against the server's OpenAPI document (openapi_all.go).
package e2etest
