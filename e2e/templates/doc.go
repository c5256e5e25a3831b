// Package templates tests agentrun end to end as a user meets it: templates: each shipped
// template applied on a fresh server and its eval cases passing with `template eval`, a folder
// with an error refused with nothing made, inbound-lead fired by a signed delivery, code-review
// on a real git repository in the sandbox, and `template eval` failing a failing case.
//
// The real binary runs as a child process on a temporary data folder (e2etest.Env), driven
// through its CLI and HTTP API; the scripted model server is the only stand-in.
package templates
