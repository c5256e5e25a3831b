package agent

import (
	"agentrun.dev/agentrun/internal/catalog"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/learning"
	"agentrun.dev/agentrun/internal/tools"
)

// toolKind is what runs a tool call. A call's name is resolved to it once (resolveTool), so the
// call then goes straight down, decode → policy → journal → execute, without asking the
// registries again what the tool is.
type toolKind int

const (
	toolUnknown   toolKind = iota // on no registry of this server
	toolLearned                   // a learned workflow offered as a tool
	toolAskPerson                 // turned into a question to a person
	toolServer                    // web_fetch, skill, note: run by the server itself
	toolMCP                       // a tool of one of spec.mcpServers
	toolComputer                  // a tool of the computer's kind
	toolBuiltin                   // a tool of internal/tools, on the run folder
)

// resolvedTool is a tool name resolved for this drive: its kind, the handler's definition for
// that kind, and whether the agent has the tool at all.
type resolvedTool struct {
	kind     toolKind
	allowed  bool
	workflow *learning.Workflow // toolLearned
	mcp      catalog.Entry      // toolMCP
	computer computer.ToolDef   // toolComputer
	builtin  tools.Tool         // toolBuiltin
}

// resolveTool looks name up once on every registry. The order of the kinds is the order a name
// is claimed in: a learned workflow first (it is offered only when its name is none of the
// agent's tools), then the server's own tools, MCP, the computer's, the built-in ones.
func (d *drive) resolveTool(name string) resolvedTool {
	r := resolvedTool{workflow: d.learnedWorkflow(name)}
	mcp, isMCP := d.mcpEntry(name)
	td, isComputer := d.computerTool(name)
	r.allowed = d.has(name, isComputer, isMCP, r.workflow != nil)
	switch {
	case r.workflow != nil:
		r.kind = toolLearned
	case name == tools.AskPersonName:
		r.kind = toolAskPerson
	case name == catalog.WebFetchName || name == catalog.SkillName || name == catalog.NoteName:
		r.kind = toolServer
	case isMCP:
		r.kind, r.mcp = toolMCP, mcp
	case isComputer:
		r.kind, r.computer = toolComputer, td
	default:
		if t, ok := tools.Lookup(name); ok {
			r.kind, r.builtin = toolBuiltin, t
		}
	}
	return r
}

// allowed reports whether the agent has the tool: it lists it, or the tool comes with its
// computer (the kind's own tools, and the folder tools with a sandbox or a desktop).
func (d *drive) allowed(name string) bool { return d.resolveTool(name).allowed }

// has is allowed on the lookups resolveTool already made.
func (d *drive) has(name string, isComputer, isMCP, isLearned bool) bool {
	if isComputer {
		return true // the tools of the computer's kind come with it
	}
	if d.comesWithComputer(name) {
		return true
	}
	for _, t := range d.spec.Tools {
		if t == name {
			return true
		}
	}
	if isMCP {
		return true // ticked in spec.mcpServers
	}
	if name == catalog.NoteName {
		return d.spec.Learning
	}
	if isLearned {
		return true
	}
	return name == catalog.SkillName && (len(d.spec.Skills) > 0 || len(d.skills) > 0)
}
