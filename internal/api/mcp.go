package api

import (
	"net/url"
	"regexp"
	"strings"
)

// MCPServer is one MCP server an agent's runs may use: a stdio server (Command, Args, Env),
// started for the run with the run folder as its working folder, or a streamable-HTTP server
// (URL, Headers). Nothing is granted until ticked: Tools names the server's tools the runs are
// offered, each as mcp__NAME__TOOL. An Env or Headers value may be "secret:SECRET/KEY", a key of
// a sealed secret, opened on the runner when the server is started and never shown to the model
// or put on the timeline.
type MCPServer struct {
	Name    string            `json:"name"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Tools   []string          `json:"tools,omitempty"`
}

// MCPTool is one tool an MCP server lists, as `agentrun agents mcp-tools` shows it.
type MCPTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// ReadOnly and Idempotent are the server's readOnlyHint and idempotentHint: a call of such a
	// tool is repeated after a crash; any other parks the run to be resolved.
	ReadOnly   bool `json:"readOnly,omitempty"`
	Idempotent bool `json:"idempotent,omitempty"`
	// Ticked: the agent's spec ticks it, so its runs are offered it.
	Ticked bool `json:"ticked"`
	// InputSchema is the server's JSON Schema of the tool's arguments.
	InputSchema any `json:"inputSchema,omitempty"`
}

// MCPToolList is the answer of GET /v2/agents/{name}/mcp-tools/{server}.
type MCPToolList struct {
	Agent  string    `json:"agent"`
	Server string    `json:"server"`
	Tools  []MCPTool `json:"tools"`
	// Missing are ticked names the server does not have.
	Missing []string `json:"missing,omitempty"`
}

// SecretPrefix starts an Env or Headers value that names a sealed secret's key.
const SecretPrefix = "secret:"

var (
	mcpServerName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	// MCP tool names (the spec allows letters, digits, _, - and .); "__" would make
	// mcp__SERVER__TOOL ambiguous only in the server part, which forbids it.
	mcpToolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	envVarName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerName  = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// ParseSecretRef splits "secret:NAME/KEY"; ok is false for a value that is not a reference.
func ParseSecretRef(v string) (name, key string, ok bool, err error) {
	rest, isRef := strings.CutPrefix(v, SecretPrefix)
	if !isRef {
		return "", "", false, nil
	}
	name, key, found := strings.Cut(rest, "/")
	if !found || key == "" || dnsLabel.FindString(name) == "" {
		return "", "", true, errBadSecretRef
	}
	return name, key, true, nil
}

type secretRefError struct{}

func (secretRefError) Error() string {
	return `a secret reference is "secret:NAME/KEY" (NAME a secret's name, KEY one of its keys)`
}

var errBadSecretRef error = secretRefError{}

// HarnessMCPPrefix begins the name a harness other than builtin sees each of the run's tools
// under: the gateway serves them as the MCP server "agentrun".
const HarnessMCPPrefix = "mcp__agentrun__"

// validateMCPServers checks spec.mcpServers. Whether each ticked tool exists is asked of the
// server itself when the agent is created or applied (internal/server).
func validateMCPServers(servers []MCPServer, harness string) error {
	names := map[string]bool{}
	for i := range servers {
		m := &servers[i]
		at := "spec.mcpServers[" + itoa(i) + "]"
		if m.Name == "" {
			return E(CodeRequired, at+".name", "an MCP server needs a name")
		}
		if len(m.Name) > 40 || !mcpServerName.MatchString(m.Name) {
			return Invalid(at+".name", "MCP server name %q: lowercase letters, digits and '-', at most 40, starting and ending with a letter or digit (its tools are offered as mcp__NAME__TOOL)", m.Name)
		}
		if names[m.Name] {
			return Invalid(at+".name", "MCP server %q is named twice", m.Name)
		}
		names[m.Name] = true
		switch {
		case m.Command == "" && m.URL == "":
			return E(CodeRequired, at+".command", "an MCP server needs command (stdio) or url (streamable HTTP)")
		case m.Command != "" && m.URL != "":
			return Invalid(at+".url", "give command (stdio) or url (streamable HTTP), not both")
		case m.Command != "":
			if len(m.Headers) > 0 {
				return Invalid(at+".headers", "headers are for a url server; a command server takes env")
			}
			for k, v := range m.Env {
				if !envVarName.MatchString(k) {
					return Invalid(at+".env."+k, "%q is not an environment variable name", k)
				}
				if _, _, _, err := ParseSecretRef(v); err != nil {
					return Invalid(at+".env."+k, "%v", err)
				}
			}
		default:
			if len(m.Env) > 0 || len(m.Args) > 0 {
				return Invalid(at+".env", "env and args are for a command server; a url server takes headers")
			}
			u, err := url.Parse(m.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return Invalid(at+".url", "url %q: want an http:// or https:// URL of the server's MCP endpoint", m.URL)
			}
			if u.User != nil {
				return Invalid(at+".url", "put credentials in headers (which may name a secret), not in the url")
			}
			for k, v := range m.Headers {
				if !headerName.MatchString(k) {
					return Invalid(at+".headers."+k, "%q is not an HTTP header name", k)
				}
				if strings.ContainsAny(v, "\r\n") {
					return Invalid(at+".headers."+k, "a header value is one line")
				}
				if _, _, _, err := ParseSecretRef(v); err != nil {
					return Invalid(at+".headers."+k, "%v", err)
				}
			}
		}
		ticked := map[string]bool{}
		for j, t := range m.Tools {
			f := at + ".tools[" + itoa(j) + "]"
			if !mcpToolName.MatchString(t) {
				return Invalid(f, "tool name %q: letters, digits, '_', '-' and '.', at most 128", t)
			}
			if ticked[t] {
				return Invalid(f, "tool %q is ticked twice", t)
			}
			// Another harness is served the tool by the gateway's MCP server "agentrun", so it
			// sees mcp__agentrun__mcp__SERVER__TOOL; the vendors take tool names of 64 at most.
			if n := len(HarnessMCPPrefix) + len("mcp__"+m.Name+"__"+t); harness != "" && harness != "builtin" && n > 64 {
				return Invalid(f, "harness %s sees tool %q as %smcp__%s__%s, %d characters; model vendors take 64 at most (a shorter server name helps)", harness, t, HarnessMCPPrefix, m.Name, t, n)
			}
			ticked[t] = true
		}
	}
	return nil
}

// MCPSecretRefs are the secrets an MCP server's env and headers name, with the field of each.
func MCPSecretRefs(at string, m MCPServer) map[string]string {
	out := map[string]string{}
	for k, v := range m.Env {
		if name, _, ok, err := ParseSecretRef(v); ok && err == nil {
			out[at+".env."+k] = name
		}
	}
	for k, v := range m.Headers {
		if name, _, ok, err := ParseSecretRef(v); ok && err == nil {
			out[at+".headers."+k] = name
		}
	}
	return out
}
