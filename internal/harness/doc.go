// Package harness runs external agent loops (spec.harness claude-agent, codex, pi, opencode) as a
// child process per run, beside the built-in loop (docs/architecture.md, "Harnesses and the
// gateway").
//
// The split of work:
//
//   - A Driver (this package, one file per harness) knows one CLI: the npm package and version it
//     installs (Package), the wire formats its model calls can speak (Wires; the host picks the one
//     the run's provider serves, Session.Wire, which names the gateway endpoint it is pointed at), and how to start it and speak its stdio protocol (Start, returning a Process
//     whose Turn sends one user turn and returns the harness's final text for it).
//   - The host (internal/agent, harness.go) owns everything durable: it installs the package
//     (Install), mints the run's gateway token, serves the run's tools over MCP, journals every
//     model call (internal/gateway forwards it) and tool call (the built-in loop's own toolCall:
//     strict decode, approvals, the server's deny set, ask_person), and parks, fails or finishes the
//     run. A driver never touches the journal or the store.
//   - After a crash the host starts the harness again and replays: every completed model call is
//     answered from the journal byte for byte and every completed tool call with its recorded
//     result, so the harness walks the same path without reaching the vendor or the computer.
//
// To add a driver:
//
//  1. Write NAME.go with a type implementing Driver. Start builds the command line and environment
//     from the Session: point the harness's model endpoint, speaking Session.Wire, at Session.GatewayURL (the wire's base,
//     gateway.Wire.BaseURL: .../v2/gateway/anthropic or .../v2/gateway/openai/v1) with Session.Token as its API key, give it
//     the MCP server at Session.MCPURL (header "Authorization: Bearer TOKEN") as its only tools, turn
//     its own built-in tools off, set its output limit to Session.MaxTokens, run it with Session.Dir
//     as its working directory and Session.Home as its HOME, and turn off every other network
//     traffic (telemetry, update checks). Use Session.Command: it starts the process inside the
//     run's computer when the session has one (Session.Computer: Dir is /workspace there, Bin and
//     Home are mounted at their host paths, the gateway is reached at GatewayURL through a
//     loopback port forwarded to the gateway's unix socket), on the runner otherwise; in its own
//     process group either way, killed with the group when ctx ends or Stop is called, and when
//     the runner dies (Pdeathsig on the runner; with the computer inside one); it keeps the last
//     stderr lines for ExitError.
//  2. Where the harness still asks permission for a tool of its own (a control request, an approval
//     request), answer it with Session.Permit: our policy decides (allow / ask / deny, the server's
//     deny set), and a call that asks parks the run.
//  3. Add it to the drivers list in registry.go and its name to api.Harnesses, so validation
//     accepts it and `agentrun server capabilities` lists it.
//  4. Add e2e tests in e2e/harness/harness_NAME_test.go: a HarnessCase for the scenarios every
//     harness runs (e2e/e2etest/harness_scenarios.go: the quickstart, an approval, a denial, a cap
//     pause, SIGKILL mid model call and mid tool call, keep-alive, cancel). They run the real CLI
//     from AGENTRUN_HARNESS_CACHE (or install it) against the scripted model server and skip,
//     saying so, when npm cannot be reached.
//
// Packages install on first use with the machine's own npm (its registry configuration, never a
// host named here) into DATA/harnesses/NAME@VERSION; AGENTRUN_HARNESS_CACHE names a folder of such
// pre-installed NAME@VERSION folders that is looked in first (CI and tests install once).
package harness
