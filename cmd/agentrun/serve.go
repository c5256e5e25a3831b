package main

import "github.com/spf13/cobra"

// newServeCmd is `agentrun serve`: the server with its in-process runner.
func newServeCmd() *cobra.Command {
	return &cobra.Command{Use: "serve", Short: "Start the server (and one runner) on port 7340 or the next free one"}
}

// newDevCmd is `agentrun dev ...`: developer tools such as the scripted model server.
func newDevCmd() *cobra.Command {
	return &cobra.Command{Use: "dev", Short: "Developer tools (the scripted model server)"}
}
