package api

import (
	"net/url"
	"regexp"
	"strings"

	"agentrun.dev/agentrun/internal/catalog"
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

// MaxToolName is the longest tool name the model vendors take.
const MaxToolName = 64

// MCPOfferedName is the name the model is offered an MCP server's tool by: mcp__SERVER__TOOL on
// the builtin harness; another harness is served the tool by the gateway's MCP server
// "agentrun", so it sees mcp__agentrun__mcp__SERVER__TOOL.
func MCPOfferedName(harness Harness, server, tool string) string {
	name := catalog.MCPName(server, tool)
	if harness != "" && harness != "builtin" {
		name = HarnessMCPPrefix + name
	}
	return name
}

// validateMCPServers checks spec.mcpServers. Whether each ticked tool exists is asked of the
// server itself when the agent is created or applied (internal/server).
func validateMCPServers(servers []MCPServer, harness Harness) error {
	var errs ErrorList
	names := map[string]bool{}
	for i := range servers {
		m := &servers[i]
		at := NewPath("spec", "mcpServers").Index(i)
		name := at.Child("name").String()
		switch {
		case m.Name == "":
			errs.Add(E(CodeRequired, name, "an MCP server needs a name"))
		case len(m.Name) > 40 || !mcpServerName.MatchString(m.Name):
			errs.Add(Invalid(name, "MCP server name %q: lowercase letters, digits and '-', at most 40, starting and ending with a letter or digit (its tools are offered as mcp__NAME__TOOL)", m.Name))
		case names[m.Name]:
			errs.Add(Invalid(name, "MCP server %q is named twice", m.Name))
		}
		names[m.Name] = true
		switch {
		case m.Command == "" && m.URL == "":
			errs.Add(E(CodeRequired, at.Child("command").String(), "an MCP server needs command (stdio) or url (streamable HTTP)"))
		case m.Command != "" && m.URL != "":
			errs.Add(Invalid(at.Child("url").String(), "give command (stdio) or url (streamable HTTP), not both"))
		case m.Command != "":
			if len(m.Headers) > 0 {
				errs.Add(Invalid(at.Child("headers").String(), "headers are for a url server; a command server takes env"))
			}
			for k, v := range m.Env {
				f := at.Child("env").Member(k).String()
				if !envVarName.MatchString(k) {
					errs.Add(Invalid(f, "%q is not an environment variable name", k))
				} else if _, _, _, err := ParseSecretRef(v); err != nil {
					errs.Add(Invalid(f, "%v", err))
				}
			}
		default:
			if len(m.Env) > 0 || len(m.Args) > 0 {
				errs.Add(Invalid(at.Child("env").String(), "env and args are for a command server; a url server takes headers"))
			}
			u, err := url.Parse(m.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs.Add(Invalid(at.Child("url").String(), "url %q: want an http:// or https:// URL of the server's MCP endpoint", m.URL))
			} else if u.User != nil {
				errs.Add(Invalid(at.Child("url").String(), "put credentials in headers (which may name a secret), not in the url"))
			}
			for k, v := range m.Headers {
				f := at.Child("headers").Member(k).String()
				if !headerName.MatchString(k) {
					errs.Add(Invalid(f, "%q is not an HTTP header name", k))
				} else if strings.ContainsAny(v, "\r\n") {
					errs.Add(Invalid(f, "a header value is one line"))
				} else if _, _, _, err := ParseSecretRef(v); err != nil {
					errs.Add(Invalid(f, "%v", err))
				}
			}
		}
		ticked := map[string]bool{}
		for j, t := range m.Tools {
			f := at.Child("tools").Index(j).String()
			if !mcpToolName.MatchString(t) {
				errs.Add(Invalid(f, "tool name %q: letters, digits, '_', '-' and '.', at most 128", t))
			} else if ticked[t] {
				errs.Add(Invalid(f, "tool %q is ticked twice", t))
			} else if name := MCPOfferedName(harness, m.Name, t); len(name) > MaxToolName {
				errs.Add(Invalid(f, "the model is offered tool %q as %s, %d characters; model vendors take %d at most (a shorter server or tool name helps)", t, name, len(name), MaxToolName))
			}
			ticked[t] = true
		}
	}
	return errs.Err()
}

// MCPSecretRefs are the secrets an MCP server's env and headers name, with the field of each.
func MCPSecretRefs(at string, m MCPServer) map[string]string {
	out := map[string]string{}
	for k, v := range m.Env {
		if name, _, ok, err := ParseSecretRef(v); ok && err == nil {
			out[NewPath(at).Child("env").Member(k).String()] = name
		}
	}
	for k, v := range m.Headers {
		if name, _, ok, err := ParseSecretRef(v); ok && err == nil {
			out[NewPath(at).Child("headers").Member(k).String()] = name
		}
	}
	return out
}
