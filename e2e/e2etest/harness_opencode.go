package e2etest

// OpencodeCase is OpenCode for the scenarios every harness runs (HarnessCase).
var OpencodeCase = HarnessCase{Name: "opencode", Prefix: "agentrun_", Procs: runnerChildren}
