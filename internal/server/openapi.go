package server

// openAPIDoc describes the /v2 API's routes. Schemas are summarized, not exhaustive.
func openAPIDoc() map[string]any {
	op := func(summary string) map[string]any {
		return map[string]any{"summary": summary, "responses": map[string]any{"default": map[string]any{"description": "JSON; errors are {code, message, field}"}}}
	}
	return map[string]any{
		"openapi":    "3.1.0",
		"info":       map[string]any{"title": "agentrun API", "version": "v2"},
		"components": map[string]any{"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}}},
		"security":   []any{map[string]any{"bearer": []any{}}},
		"paths": map[string]any{
			"/v2/capabilities":                  map[string]any{"get": op("What this server can run")},
			"/v2/agents":                        map[string]any{"get": op("List agents"), "post": op("Create an agent (resource or {definition})")},
			"/v2/agents/{name}":                 map[string]any{"get": op("Get an agent"), "put": op("Apply an agent"), "patch": op("Merge-patch an agent"), "delete": op("Delete an agent")},
			"/v2/agents/{name}/runs":            map[string]any{"post": op("Start a run ({input: {content}})")},
			"/v2/agentruns":                     map[string]any{"get": op("List runs (agent, phase, fieldSelector)"), "post": op("Create a run, or an AgentRunList of up to 100 (all or nothing, list order; Idempotency-Key header)")},
			"/v2/agentruns/{name}":              map[string]any{"get": op("Get a run"), "put": op("Apply a run"), "patch": op("Raise the run's own cap {spec: {maxCostUSD}} (raise only; nothing else may change)"), "delete": op("Delete a run")},
			"/v2/credits":                       map[string]any{"get": op("Credits: balance, reservations held by calls in flight, ledger (limit)"), "post": op("Add credits {amountUSD, note}; runs waiting on Credits continue")},
			"/v2/prices":                        map[string]any{"get": op("The price table: version, families, micro-dollars per million tokens")},
			"/v2/secrets":                       map[string]any{"get": op("Secrets: names and key names, never values")},
			"/v2/secrets/{name}":                map[string]any{"put": op("Set a sealed secret {data: {KEY: value}} (a signed-in person only)"), "delete": op("Remove a secret (a signed-in person only)")},
			"/v2/agentruns/{name}/messages":     map[string]any{"get": op("List messages"), "post": op("Send a message {payload, messageKey}")},
			"/v2/agentruns/{name}/cancel":       map[string]any{"post": op("Cancel a run")},
			"/v2/agentruns/{name}/steps":        map[string]any{"get": op("The run's journal")},
			"/v2/agentruns/{name}/answer":       map[string]any{"get": op("The whole answer (text/plain)")},
			"/v2/agentruns/{name}/events":       map[string]any{"get": op("Timeline: JSON, or SSE with Accept: text/event-stream (Last-Event-ID)")},
			"/v2/agentruns/{name}/files/{path}": map[string]any{"get": op("A file of the run folder, or a directory listing")},
			"/v2/agentruns/{name}/resolve":      map[string]any{"post": op("Resolve an interrupted step {action: retry|skip|complete, result}")},
			"/v2/agentgroups":                   map[string]any{"get": op("List groups with status (phase, counts, blockedReasons, cost)"), "post": op("Create a group (spec.agent, limits, sealed, evaluation)")},
			"/v2/agentgroups/{name}":            map[string]any{"get": op("Get a group"), "put": op("Apply a group"), "patch": op("Merge-patch a group (maxActive, a higher maxCostUSD, sealed: true)"), "delete": op("Delete a group with all its runs")},
			"/v2/agentgroups/{name}/cancel":     map[string]any{"post": op("Cancel every unfinished run of the group")},
			"/v2/agentgroups/{name}/results":    map[string]any{"get": op("An evaluation group's per-case results and summary")},
			"/v2/environments":                  map[string]any{"get": op("List environments (built in and loaded; answers hidden)"), "post": op("Load an environment version (immutable per NAME@VERSION)")},
			"/v2/environments/{ref}":            map[string]any{"get": op("Get NAME@VERSION (answers hidden)"), "put": op("Load an environment version")},
		},
	}
}
