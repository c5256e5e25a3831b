// Package api tests agentrun end to end as a user meets it: the API and CLI: validation and bad
// input, dry runs, text output, serve URLs and the API token, sign-in and connection limits,
// limits, a run's lifecycle, the seed's quickstart, nodus documents, keep-alive, the built-in
// agent, the OpenAI vendor, model keys, strict tool input, vendor usage, retention, and the
// TypeScript client against a live server (skipped without npm).
//
// The real binary runs as a child process on a temporary data folder (e2etest.Env), driven
// through its CLI and HTTP API; the scripted model server is the only stand-in.
package api
