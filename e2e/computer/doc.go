// Package computer tests agentrun end to end as a user meets it: computers: the bubblewrap sandbox
// and its death, the docker sandbox, the desktop (Xvfb), the browser's recovery, the computer
// tools, the run folder, opaque shell commands and web fetch. Tests skip when bubblewrap, Docker,
// Xvfb or Chromium is missing.
//
// The real binary runs as a child process on a temporary data folder (e2etest.Env), driven
// through its CLI and HTTP API; the scripted model server is the only stand-in.
package computer
