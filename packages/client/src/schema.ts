// Generated from the agentrun server's /v2/openapi.json by openapi-typescript
// (npm run generate). Do not edit.

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** ok when the store answers a cheap query in time */
        get: operations["get_healthz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/livez": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** ok while the process serves HTTP (asks nothing of the store): for liveness probes that restart the process */
        get: operations["get_livez"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Prometheus metrics (counts and latencies only); without credentials only under serve --metrics-public */
        get: operations["get_metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** ok when the process can take work: the store answers, its schema is current, and the runner part (if any) is claiming */
        get: operations["get_readyz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/SKILL.md": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The skill teaching a coding agent this CLI (the text agentrun skill install writes) */
        get: operations["get_SKILL_md"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/a2a/{agent}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** A2A v1.0 JSON-RPC: SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask */
        post: operations["post_a2a__agent_"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/a2a/{agent}/.well-known/agent-card.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The agent's A2A v1.0 agent card (bearer required: agent names are private) */
        get: operations["get_a2a__agent___well_known_agent_card_json"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/a2a/{agent}/{op}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** A2A v1.0 HTTP+JSON: message:send, message:stream */
        post: operations["post_a2a__agent___op_"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/a2a/{agent}/tasks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A2A v1.0 HTTP+JSON: ListTasks (the agent's tasks, newest first) */
        get: operations["get_a2a__agent__tasks"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/a2a/{agent}/tasks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A2A v1.0 HTTP+JSON: GetTask */
        get: operations["get_a2a__agent__tasks__id_"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/a2a/{agent}/tasks/{idop}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** A2A v1.0 HTTP+JSON: ID:cancel (CancelTask), ID:subscribe (SubscribeToTask) */
        post: operations["post_a2a__agent__tasks__idop_"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agentgroups": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List groups with their status */
        get: operations["get_agentgroups"];
        put?: never;
        /** Create a group (spec.agent, limits, sealed, evaluation) */
        post: operations["post_agentgroups"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agentgroups/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a group */
        get: operations["get_agentgroups__name_"];
        /** Apply a group */
        put: operations["put_agentgroups__name_"];
        post?: never;
        /** Delete a group with all its runs */
        delete: operations["delete_agentgroups__name_"];
        options?: never;
        head?: never;
        /** Merge-patch a group (maxActive, a higher maxCostUSD, sealed: true) */
        patch: operations["patch_agentgroups__name_"];
        trace?: never;
    };
    "/v2/agentgroups/{name}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Cancel every unfinished run of the group */
        post: operations["post_agentgroups__name__cancel"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agentgroups/{name}/results": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** An evaluation group's per-case results and summary */
        get: operations["get_agentgroups__name__results"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agentruns": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List runs */
        get: operations["get_agentruns"];
        put?: never;
        /** Create a run (a resource or the seed's {agent, input}), or an AgentRunList of up to 100 runs: all or nothing, in list order */
        post: operations["post_agentruns"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agentruns/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a run */
        get: operations["get_agentruns__name_"];
        /** Apply a run (create it, or the same spec again) */
        put: operations["put_agentruns__name_"];
        post?: never;
        /** Delete a run */
        delete: operations["delete_agentruns__name_"];
        options?: never;
        head?: never;
        /** Raise the run's own cap {spec: {maxCostUSD}} (raise only; nothing else may change) */
        patch: operations["patch_agentruns__name_"];
        trace?: never;
    };
    "/v2/agentruns/{name}/answer": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The whole answer */
        get: operations["get_agentruns__name__answer"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agentruns/{name}/approvals": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The run's tool calls that asked for approval, pending and decided */
        get: operations["get_agentruns__name__approvals"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agentruns/{name}/approvals/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Approve or deny a waiting tool call (a signed-in person only) */
        post: operations["post_agentruns__name__approvals__id_"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agentruns/{name}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Cancel a run */
        post: operations["post_agentruns__name__cancel"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agentruns/{name}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The timeline: a JSON page, or with Accept: text/event-stream an SSE stream that follows the run until it finishes */
        get: operations["get_agentruns__name__events"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agentruns/{name}/files/{path}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A file of the run folder (its bytes), or a directory's listing */
        get: operations["get_agentruns__name__files__path_"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agentruns/{name}/fork": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Fork the run at a completed step {atStep, name, message, maxCostUSD}: a new run with its steps up to there and its folder as that step left it */
        post: operations["post_agentruns__name__fork"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agentruns/{name}/messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the run's messages */
        get: operations["get_agentruns__name__messages"];
        put?: never;
        /** Send a message {payload, messageKey, ifBusy}: a key is delivered once; ifBusy says what it does to a turn in flight */
        post: operations["post_agentruns__name__messages"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agentruns/{name}/nodes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A workflow run's node tree: each node's state, value preview and cost, rolled up */
        get: operations["get_agentruns__name__nodes"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agentruns/{name}/resolve": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Resolve an interrupted step {action: retry|skip|complete, result} */
        post: operations["post_agentruns__name__resolve"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agentruns/{name}/steps": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The run's journal: each model and tool call, in order */
        get: operations["get_agentruns__name__steps"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agents": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List agents */
        get: operations["get_agents"];
        put?: never;
        /** Create an agent (a resource, or the seed's {definition}) */
        post: operations["post_agents"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agents/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get an agent */
        get: operations["get_agents__name_"];
        /** Apply an agent (create or replace its spec: a new revision when it changes) */
        put: operations["put_agents__name_"];
        post?: never;
        /** Delete an agent (its revisions are kept) */
        delete: operations["delete_agents__name_"];
        options?: never;
        head?: never;
        /** Merge-patch an agent */
        patch: operations["patch_agents__name_"];
        trace?: never;
    };
    "/v2/agents/{name}/learning": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The learning folder's main: notes, skills' files and workflows, each with its ETag (blob hash) */
        get: operations["get_agents__name__learning"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agents/{name}/learning/bundle": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** main as a git bundle (git clone FILE) */
        get: operations["get_agents__name__learning_bundle"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agents/{name}/learning/files/{path}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One file of main, whole (a bare name is a note: notes/NAME.md); ETag is its blob hash */
        get: operations["get_agents__name__learning_files__path_"];
        put?: never;
        post?: never;
        /** Retire a file: a commit that removes it; If-Match must be its current ETag */
        delete: operations["delete_agents__name__learning_files__path_"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agents/{name}/learning/log": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The learning folder's commits, newest first */
        get: operations["get_agents__name__learning_log"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agents/{name}/learning/restore": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Restore a file {path, from}: a commit that brings it back as it was in commit from */
        post: operations["post_agents__name__learning_restore"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agents/{name}/mcp-tools/{server}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the tools of one of the agent's MCP servers, each marked ticked or not */
        get: operations["get_agents__name__mcp_tools__server_"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/agents/{name}/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Start a run of the agent ({input: {content}}) */
        post: operations["post_agents__name__runs"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/capabilities": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** What this server can run: computers, harnesses, store */
        get: operations["get_capabilities"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/credits": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Credits: balance, reservations held by calls in flight, ledger */
        get: operations["get_credits"];
        put?: never;
        /** Add credits {amountUSD, note}; runs waiting on credits continue */
        post: operations["post_credits"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/environments": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List environments (built in and loaded; answers hidden) */
        get: operations["get_environments"];
        put?: never;
        /** Load an environment version (immutable per NAME@VERSION) */
        post: operations["post_environments"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/environments/{ref}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get NAME@VERSION (answers hidden) */
        get: operations["get_environments__ref_"];
        /** Load an environment version */
        put: operations["put_environments__ref_"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/hooks/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** A signed delivery for a webhook (Standard Webhooks) or GitHub trigger */
        post: operations["post_hooks__name_"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/login": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Sign in (or set the first password with the setup code); answers a session token */
        post: operations["post_login"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/logout": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** End the session the request carries */
        post: operations["post_logout"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/mcp": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** MCP (Streamable HTTP): the session's stream of server notifications (tools/list_changed) */
        get: operations["get_mcp"];
        put?: never;
        /** MCP (Streamable HTTP): each agent as a tool, plus get-run, send-message and list-runs */
        post: operations["post_mcp"];
        /** MCP (Streamable HTTP): end the session */
        delete: operations["delete_mcp"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This document */
        get: operations["get_openapi_json"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/prices": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The price table: version, families, micro-dollars per million tokens */
        get: operations["get_prices"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/runners": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Runners and their heartbeats */
        get: operations["get_runners"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/secrets": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Secrets: names and key names, never values */
        get: operations["get_secrets"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/secrets/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /** Set a sealed secret {data: {KEY: value}} (a signed-in person only) */
        put: operations["put_secrets__name_"];
        post?: never;
        /** Remove a secret (a signed-in person only) */
        delete: operations["delete_secrets__name_"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/skills": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List skills (every version) */
        get: operations["get_skills"];
        put?: never;
        /** Add a skill version (the same content again is the version that holds it) */
        post: operations["post_skills"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/skills/{ref}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get NAME or NAME@VERSION */
        get: operations["get_skills__ref_"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/templates/apply": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Make a template's agent, skills and triggers in one step: all are checked first, and what was made is removed if a later part fails (a trigger whose signing secret is not stored yet is made suspended) */
        post: operations["post_templates_apply"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/triggers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List triggers */
        get: operations["get_triggers"];
        put?: never;
        /** Create a trigger (a schedule, a webhook or a GitHub hook) */
        post: operations["post_triggers"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/triggers/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a trigger */
        get: operations["get_triggers__name_"];
        /** Apply a trigger */
        put: operations["put_triggers__name_"];
        post?: never;
        /** Delete a trigger */
        delete: operations["delete_triggers__name_"];
        options?: never;
        head?: never;
        /** Merge-patch a trigger */
        patch: operations["patch_triggers__name_"];
        trace?: never;
    };
    "/v2/triggers/{name}/fire": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Fire the trigger now */
        post: operations["post_triggers__name__fire"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/triggers/{name}/fires": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The trigger's fires, newest first */
        get: operations["get_triggers__name__fires"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/triggers/{name}/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Make a new signing secret, answered once (a signed-in person only) */
        post: operations["post_triggers__name__rotate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/triggers/{name}/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Show the run a fire would start over a payload; starts and records nothing */
        post: operations["post_triggers__name__test"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List outbound webhooks */
        get: operations["get_webhooks"];
        put?: never;
        /** Create an outbound webhook (signed Standard Webhooks deliveries of run and trigger events) */
        post: operations["post_webhooks"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/webhooks/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a webhook */
        get: operations["get_webhooks__name_"];
        /** Apply a webhook */
        put: operations["put_webhooks__name_"];
        post?: never;
        /** Delete a webhook with its deliveries */
        delete: operations["delete_webhooks__name_"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/webhooks/{name}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The webhook's deliveries, newest first, each with its attempts */
        get: operations["get_webhooks__name__deliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/webhooks/{name}/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Make a new whsec_ signing secret in the secret spec.secretRef names, answered once (a signed-in person only) */
        post: operations["post_webhooks__name__rotate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/webhooks/{name}/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Queue a webhook.test delivery to this webhook alone */
        post: operations["post_webhooks__name__test"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/whoami": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Who the credential is: the API token or a person */
        get: operations["get_whoami"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/workflows:validate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Validate a workflow document: every error with its code, JSON pointer and line:column (?runnable=true also refuses what this server does not run) */
        post: operations["post_workflows_validate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        A2aMessage: {
            contextId?: string;
            extensions?: string[];
            messageId: string;
            metadata?: {
                [key: string]: unknown;
            };
            parts: components["schemas"]["Part"][] | null;
            referenceTaskIds?: string[];
            role: string;
            taskId?: string;
        };
        A2aTask: {
            artifacts?: components["schemas"]["Artifact"][];
            contextId: string;
            history?: components["schemas"]["A2aMessage"][];
            id: string;
            metadata?: {
                [key: string]: unknown;
            };
            status: components["schemas"]["TaskStatus"];
        };
        AddCreditsBodyInput: {
            amountUSD?: string;
            note?: string;
        };
        Agent: {
            apiVersion?: string;
            kind?: string;
            metadata: components["schemas"]["ObjectMeta"];
            spec: components["schemas"]["AgentSpec"];
            status?: components["schemas"]["AgentStatus"];
        };
        AgentCapabilities: {
            extendedAgentCard: boolean;
            pushNotifications: boolean;
            streaming: boolean;
        };
        AgentCard: {
            capabilities: components["schemas"]["AgentCapabilities"];
            defaultInputModes: string[] | null;
            defaultOutputModes: string[] | null;
            description: string;
            documentationUrl?: string;
            name: string;
            provider?: components["schemas"]["AgentProvider"] | null;
            securityRequirements?: components["schemas"]["SecurityRequirement"][];
            securitySchemes?: {
                [key: string]: components["schemas"]["SecurityScheme"];
            };
            skills: components["schemas"]["AgentSkill"][] | null;
            supportedInterfaces: components["schemas"]["AgentInterface"][] | null;
            version: string;
        };
        AgentGroup: {
            apiVersion?: string;
            kind?: string;
            metadata: components["schemas"]["ObjectMeta"];
            spec: components["schemas"]["AgentGroupSpec"];
            status?: components["schemas"]["AgentGroupStatus"];
        };
        AgentGroupInput: {
            apiVersion?: string;
            kind?: string;
            metadata?: components["schemas"]["ObjectMetaInput"];
            spec?: components["schemas"]["AgentGroupSpecInput"];
            status?: components["schemas"]["AgentGroupStatusInput"];
        };
        AgentGroupSpec: {
            agent: string;
            evaluation?: components["schemas"]["EvaluationSpec"] | null;
            limits?: components["schemas"]["GroupLimits"];
            maxCostUSD?: string;
            sealed?: boolean;
        };
        AgentGroupSpecInput: {
            agent?: string;
            evaluation?: components["schemas"]["EvaluationSpecInput"] | null;
            limits?: components["schemas"]["GroupLimitsInput"];
            maxCostUSD?: string;
            sealed?: boolean;
        };
        AgentGroupStatus: {
            agentRevision?: number;
            blockedReasons?: {
                [key: string]: number;
            };
            cancelRequested?: boolean;
            cost?: components["schemas"]["RunCost"] | null;
            counts: components["schemas"]["GroupCounts"];
            deadline?: string | null;
            evaluation?: components["schemas"]["EvaluationStatus"] | null;
            message?: string;
            phase?: string;
            reason?: string;
        };
        AgentGroupStatusInput: {
            agentRevision?: number;
            blockedReasons?: {
                [key: string]: number;
            } | null;
            cancelRequested?: boolean;
            cost?: components["schemas"]["RunCostInput"] | null;
            counts?: components["schemas"]["GroupCountsInput"];
            deadline?: string | null;
            evaluation?: components["schemas"]["EvaluationStatusInput"] | null;
            message?: string;
            phase?: string;
            reason?: string;
        };
        AgentInput: {
            apiVersion?: string;
            kind?: string;
            metadata?: components["schemas"]["ObjectMetaInput"];
            spec?: components["schemas"]["AgentSpecInput"];
            status?: components["schemas"]["AgentStatusInput"];
        };
        AgentInterface: {
            protocolBinding: string;
            protocolVersion: string;
            tenant?: string;
            url: string;
        };
        AgentProvider: {
            organization: string;
            url: string;
        };
        AgentRun: {
            apiVersion?: string;
            kind?: string;
            metadata: components["schemas"]["ObjectMeta"];
            spec: components["schemas"]["AgentRunSpec"];
            status?: components["schemas"]["AgentRunStatus"];
        };
        AgentRunInput: {
            apiVersion?: string;
            kind?: string;
            metadata?: components["schemas"]["ObjectMetaInput"];
            spec?: components["schemas"]["AgentRunSpecInput"];
            status?: components["schemas"]["AgentRunStatusInput"];
        };
        AgentRunSpec: {
            agent: string;
            deadline?: string;
            dependsOn?: string[];
            group?: string;
            input?: string;
            keepAlive?: boolean;
            maxCostUSD?: string;
            taskKey?: string;
        };
        AgentRunSpecInput: {
            agent?: string;
            deadline?: string;
            dependsOn?: string[] | null;
            group?: string;
            input?: string;
            keepAlive?: boolean;
            maxCostUSD?: string;
            taskKey?: string;
        };
        AgentRunStatus: {
            agentRevision?: number;
            answer?: components["schemas"]["Answer"] | null;
            cancelRequested?: boolean;
            consoleURL?: string;
            cost?: components["schemas"]["RunCost"] | null;
            deadline?: string | null;
            escalation?: components["schemas"]["Escalation"] | null;
            failedNode?: string;
            finishedAt?: string | null;
            message?: string;
            payloadsPurgedAt?: string | null;
            /** @enum {string} */
            phase?: "Queued" | "Running" | "Waiting" | "NeedsResolution" | "Succeeded" | "Failed" | "Cancelled";
            reason?: string;
            runner?: string;
            startedAt?: string | null;
            traceParent?: string;
            turns?: components["schemas"]["Turn"][];
            waitingOn?: components["schemas"]["WaitingOn"] | null;
        };
        AgentRunStatusInput: {
            agentRevision?: number;
            answer?: components["schemas"]["AnswerInput"] | null;
            cancelRequested?: boolean;
            consoleURL?: string;
            cost?: components["schemas"]["RunCostInput"] | null;
            deadline?: string | null;
            escalation?: components["schemas"]["EscalationInput"] | null;
            failedNode?: string;
            finishedAt?: string | null;
            message?: string;
            payloadsPurgedAt?: string | null;
            /** @enum {string} */
            phase?: "Queued" | "Running" | "Waiting" | "NeedsResolution" | "Succeeded" | "Failed" | "Cancelled";
            reason?: string;
            runner?: string;
            startedAt?: string | null;
            traceParent?: string;
            turns?: components["schemas"]["TurnInput"][] | null;
            waitingOn?: components["schemas"]["WaitingOnInput"] | null;
        };
        AgentSkill: {
            description: string;
            examples?: string[];
            id: string;
            inputModes?: string[];
            name: string;
            outputModes?: string[];
            tags: string[] | null;
        };
        AgentSpec: {
            allowUnpricedModels?: boolean;
            approvals?: components["schemas"]["Approvals"] | null;
            computer?: components["schemas"]["ComputerSpec"] | null;
            description?: string;
            displayName?: string;
            harness?: string;
            /** @enum {string} */
            ifBusy?: "enqueue" | "reject" | "interrupt" | "rollback";
            learning?: boolean;
            maxTokens?: number;
            maxToolCalls?: number;
            mcpServers?: components["schemas"]["MCPServer"][];
            model?: components["schemas"]["ModelSpec"];
            perRunMaxCostUSD?: string;
            skills?: string[];
            state?: string;
            system?: string;
            tools?: string[];
            workflow?: unknown;
            workflowChildren?: {
                [key: string]: number;
            };
        };
        AgentSpecInput: {
            allowUnpricedModels?: boolean;
            approvals?: components["schemas"]["ApprovalsInput"] | null;
            computer?: components["schemas"]["ComputerSpecInput"] | null;
            description?: string;
            displayName?: string;
            harness?: string;
            /** @enum {string} */
            ifBusy?: "enqueue" | "reject" | "interrupt" | "rollback";
            learning?: boolean;
            maxTokens?: number;
            maxToolCalls?: number;
            mcpServers?: components["schemas"]["MCPServerInput"][] | null;
            model?: components["schemas"]["ModelSpecInput"];
            perRunMaxCostUSD?: string;
            skills?: string[] | null;
            state?: string;
            system?: string;
            tools?: string[] | null;
            workflow?: unknown | null;
            workflowChildren?: {
                [key: string]: number;
            } | null;
        };
        AgentStatus: {
            revision?: number;
            tools?: string[];
        };
        AgentStatusInput: {
            revision?: number;
            tools?: string[] | null;
        };
        Answer: {
            bytes: number;
            preview: string;
            truncated?: boolean;
        };
        AnswerInput: {
            bytes?: number;
            preview?: string;
            truncated?: boolean;
        };
        ApprovalRule: {
            action: string;
            match: string;
        };
        ApprovalRuleInput: {
            action?: string;
            match?: string;
        };
        Approvals: {
            default?: string;
            neverAsk?: boolean;
            rules?: components["schemas"]["ApprovalRule"][];
        };
        ApprovalsInput: "never-ask" | {
            default?: string;
            neverAsk?: boolean;
            rules?: components["schemas"]["ApprovalRuleInput"][] | null;
        };
        ApprovalView: {
            /** Format: date-time */
            askedAt: string;
            decidedBy?: string;
            id: number;
            input: unknown;
            note?: string;
            reason?: string;
            rule?: string;
            state: string;
            stepKey: string;
            tool: string;
        };
        Artifact: {
            artifactId: string;
            description?: string;
            metadata?: {
                [key: string]: unknown;
            };
            name?: string;
            parts: components["schemas"]["Part"][] | null;
        };
        ComputerSpec: {
            kind?: string;
            network?: boolean;
            provider?: string;
        };
        ComputerSpecInput: {
            kind?: string;
            network?: boolean;
            provider?: string;
        };
        CreditEntry: {
            amountUSD: string;
            kind: string;
            note?: string;
            run?: string;
            seq: number;
            stepKey?: string;
            time: string;
        };
        CreditReservation: {
            amountUSD: string;
            attempt: number;
            run: string;
            stepKey: string;
        };
        Credits: {
            addedUSD: string;
            availableUSD: string;
            balanceUSD: string;
            chargedUSD: string;
            enforced: boolean;
            entries: components["schemas"]["CreditEntry"][] | null;
            reservations: components["schemas"]["CreditReservation"][] | null;
            reservedUSD: string;
            unpricedCharges: number;
        };
        DecisionBodyInput: {
            decision?: string;
            reason?: string;
        };
        DeletedAnswer: {
            name: string;
            status: string;
        };
        DeliveriesAnswer: {
            items: components["schemas"]["WebhookDelivery"][] | null;
            webhook: string;
        };
        EndEvent: {
            /** @enum {string} */
            phase: "Queued" | "Running" | "Waiting" | "NeedsResolution" | "Succeeded" | "Failed" | "Cancelled";
            reason: string;
        };
        Entry: {
            cacheRead: number;
            cacheWrite1h: number;
            cacheWrite5m: number;
            input: number;
            model: string;
            output: number;
        };
        Environment: {
            apiVersion?: string;
            kind?: string;
            metadata: components["schemas"]["ObjectMeta"];
            spec: components["schemas"]["EnvironmentSpec"];
            status?: components["schemas"]["EnvironmentStatus"];
        };
        EnvironmentInput: {
            apiVersion?: string;
            kind?: string;
            metadata?: components["schemas"]["ObjectMetaInput"];
            spec?: components["schemas"]["EnvironmentSpecInput"];
            status?: components["schemas"]["EnvironmentStatusInput"];
        };
        EnvironmentSpec: {
            description?: string;
            grader: components["schemas"]["GraderSpec"];
            image?: string;
            splits: {
                [key: string]: components["schemas"]["Task"][];
            } | null;
            version: string;
        };
        EnvironmentSpecInput: {
            description?: string;
            grader?: components["schemas"]["GraderSpecInput"];
            image?: string;
            splits?: {
                [key: string]: components["schemas"]["TaskInput"][];
            } | null;
            version?: string;
        };
        EnvironmentStatus: {
            builtin?: boolean;
            tasks?: {
                [key: string]: number;
            };
        };
        EnvironmentStatusInput: {
            builtin?: boolean;
            tasks?: {
                [key: string]: number;
            } | null;
        };
        Error: {
            /** @enum {string} */
            code: "Invalid" | "UnknownField" | "WrongType" | "Required" | "PayloadTooLarge" | "DuplicateKey" | "InvalidLabel" | "NotFound" | "AlreadyExists" | "Conflict" | "MethodNotAllowed" | "AgentStopped" | "AgentNotFound" | "AgentRunFinished" | "RunBusy" | "NoAnswer" | "FileNotFound" | "NotResolvable" | "UnpricedModel" | "SecretNotFound" | "CapNotRaised" | "Unauthorized" | "PersonRequired" | "SetupRequired" | "SetupFailed" | "RateLimited" | "TooManyRequests" | "TooManyStreams" | "ClientClosed" | "Internal" | "StoreUnavailable" | "StoreFull" | "GroupNotFound" | "GroupSealed" | "GroupCancelled" | "MaxPendingReached" | "IdempotencyKeyReused" | "EnvironmentNotFound" | "PreconditionFailed" | "LearningOff" | "UnknownWebhookEvent" | "WebhookBlocked" | "StepNotFound" | "StepNotCompleted" | "RunPurged" | "FetchBadURL" | "FetchBlocked" | "FetchNetworkOff" | "FetchTooManyRedirects" | "FetchRedirectNotAllowed" | "FetchTimeout" | "FetchFailed" | "FetchCut" | "Forbidden" | "BadRequest" | "InvalidRequest" | "RunStopped" | "TokenCountLimit";
            /** @description every problem a check found, the first being this error's code, message and field (a document with three mistakes is told all three) */
            errors?: {
                /** @enum {string} */
                code: "Invalid" | "UnknownField" | "WrongType" | "Required" | "PayloadTooLarge" | "DuplicateKey" | "InvalidLabel" | "NotFound" | "AlreadyExists" | "Conflict" | "MethodNotAllowed" | "AgentStopped" | "AgentNotFound" | "AgentRunFinished" | "RunBusy" | "NoAnswer" | "FileNotFound" | "NotResolvable" | "UnpricedModel" | "SecretNotFound" | "CapNotRaised" | "Unauthorized" | "PersonRequired" | "SetupRequired" | "SetupFailed" | "RateLimited" | "TooManyRequests" | "TooManyStreams" | "ClientClosed" | "Internal" | "StoreUnavailable" | "StoreFull" | "GroupNotFound" | "GroupSealed" | "GroupCancelled" | "MaxPendingReached" | "IdempotencyKeyReused" | "EnvironmentNotFound" | "PreconditionFailed" | "LearningOff" | "UnknownWebhookEvent" | "WebhookBlocked" | "StepNotFound" | "StepNotCompleted" | "RunPurged" | "FetchBadURL" | "FetchBlocked" | "FetchNetworkOff" | "FetchTooManyRedirects" | "FetchRedirectNotAllowed" | "FetchTimeout" | "FetchFailed" | "FetchCut" | "Forbidden" | "BadRequest" | "InvalidRequest" | "RunStopped" | "TokenCountLimit";
                field?: string;
                message: string;
            }[];
            /** @description the path of the field at fault (spec.tools[1]) */
            field?: string;
            message: string;
        };
        Escalation: {
            kind: string;
            label?: string;
            stage: string;
            stepKey?: string;
            summary: string;
        };
        EscalationInput: {
            kind?: string;
            label?: string;
            stage?: string;
            stepKey?: string;
            summary?: string;
        };
        EvalCase: {
            detail?: string;
            evidence?: string;
            gradedAt?: string | null;
            repetition: number;
            reward?: number | null;
            run: string;
            /** @enum {string} */
            runPhase?: "Queued" | "Running" | "Waiting" | "NeedsResolution" | "Succeeded" | "Failed" | "Cancelled";
            runURL?: string;
            state: string;
            taskId: string;
            verdict?: string;
        };
        EvalCaseInput: {
            detail?: string;
            evidence?: string;
            gradedAt?: string | null;
            repetition?: number;
            reward?: number | null;
            run?: string;
            /** @enum {string} */
            runPhase?: "Queued" | "Running" | "Waiting" | "NeedsResolution" | "Succeeded" | "Failed" | "Cancelled";
            runURL?: string;
            state?: string;
            taskId?: string;
            verdict?: string;
        };
        EvalResults: {
            apiVersion?: string;
            evaluation: components["schemas"]["EvaluationStatus"] | null;
            group: string;
            items: components["schemas"]["EvalCase"][] | null;
            kind?: string;
            phase: string;
        };
        EvaluationSpec: {
            environment: string;
            repetitions?: number;
            seed?: number;
            split?: string;
            tasks?: number;
            timeout?: string;
        };
        EvaluationSpecInput: {
            environment?: string;
            repetitions?: number;
            seed?: number;
            split?: string;
            tasks?: number;
            timeout?: string;
        };
        EvaluationStatus: {
            cases: number;
            environment?: string;
            error?: string;
            graderVersion?: string;
            meanReward?: number | null;
            passed: number;
            passRate?: number | null;
            pending: number;
            perTask?: components["schemas"]["TaskResult"][];
            repetitions: number;
            results?: components["schemas"]["EvalCase"][];
            scored: number;
            seed: number;
            split?: string;
            tasks: number;
            timedOut: number;
            unscored: number;
        };
        EvaluationStatusInput: {
            cases?: number;
            environment?: string;
            error?: string;
            graderVersion?: string;
            meanReward?: number | null;
            passed?: number;
            passRate?: number | null;
            pending?: number;
            perTask?: components["schemas"]["TaskResultInput"][] | null;
            repetitions?: number;
            results?: components["schemas"]["EvalCaseInput"][] | null;
            scored?: number;
            seed?: number;
            split?: string;
            tasks?: number;
            timedOut?: number;
            unscored?: number;
        };
        Event: {
            data?: unknown;
            message?: string;
            seq: number;
            stepKey?: string;
            /** Format: date-time */
            time: string;
            /** @enum {string} */
            type: "run.created" | "run.admitted" | "run.started" | "run.resumed" | "run.waiting" | "run.question" | "run.approval" | "run.cap_raised" | "run.cancel_requested" | "run.resolution" | "run.diverged" | "run.succeeded" | "run.failed" | "run.cancelled" | "run.forked" | "step.started" | "step.completed" | "step.failed" | "step.interrupted" | "step.retried" | "step.resolved" | "message.received" | "message.queued" | "run.interrupted" | "turn.rolledBack" | "answer" | "approval.approve" | "approval.deny" | "tool.refused" | "tool.cut" | "turn.routed" | "cost.discrepancy" | "cost.held" | "folder.restored" | "computer.preparing" | "computer.prepared" | "computer.recreated" | "takeover.click" | "takeover.type" | "takeover.key" | "store.full" | "store.space" | "harness.install" | "harness.started" | "harness.exited" | "harness.waiting" | "gateway.clamped" | "gateway.translated" | "skill.opened" | "mcp.unavailable" | "learning.given" | "learning.opened" | "learning.proposed" | "learning.refused" | "learning.dropped" | "learning.kept" | "learning.committed";
        };
        FileEntry: {
            /** Format: date-time */
            modified: string;
            path: string;
            size: number;
        };
        FireAnswer: {
            consoleURL?: string;
            fire: components["schemas"]["TriggerFire"];
            replayed: boolean;
        };
        FireBodyInput: {
            payload?: unknown | null;
        };
        FiresAnswer: {
            items: components["schemas"]["TriggerFire"][] | null;
            trigger: string;
        };
        ForkRequestInput: {
            atStep?: string;
            maxCostUSD?: string;
            message?: string;
            name?: string;
        };
        GraderSpec: {
            caseSensitive?: boolean;
            kind: string;
            model?: string;
            pattern?: string;
            rubric?: string;
            schema?: unknown;
            script?: string;
            timeoutSeconds?: number;
        };
        GraderSpecInput: {
            caseSensitive?: boolean;
            kind?: string;
            model?: string;
            pattern?: string;
            rubric?: string;
            schema?: unknown | null;
            script?: string;
            timeoutSeconds?: number;
        };
        GroupCounts: {
            active: number;
            cancelled: number;
            failed: number;
            queued: number;
            succeeded: number;
            waiting: number;
        };
        GroupCountsInput: {
            active?: number;
            cancelled?: number;
            failed?: number;
            queued?: number;
            succeeded?: number;
            waiting?: number;
        };
        GroupDeletedAnswer: {
            name: string;
            runsDeleted: number;
            status: string;
        };
        GroupLimits: {
            maxActive?: number;
            maxCostUSD?: string;
            maxPending?: number;
        };
        GroupLimitsInput: {
            maxActive?: number;
            maxCostUSD?: string;
            maxPending?: number;
        };
        HookIgnoredAnswer: {
            ignored: boolean;
            reason: string;
        };
        HookPongAnswer: {
            message: string;
            ok: boolean;
            trigger: string;
        };
        HTTPAuthSecurityScheme: {
            bearerFormat?: string;
            description?: string;
            scheme: string;
        };
        ItemsOfApprovalView: {
            items: components["schemas"]["ApprovalView"][] | null;
        };
        ItemsOfEvent: {
            items: components["schemas"]["Event"][] | null;
        };
        ItemsOfFileEntry: {
            items: components["schemas"]["FileEntry"][] | null;
        };
        ItemsOfMessage: {
            items: components["schemas"]["Message"][] | null;
        };
        ItemsOfRunnerView: {
            items: components["schemas"]["RunnerView"][] | null;
        };
        ItemsOfSecretInfo: {
            items: components["schemas"]["SecretInfo"][] | null;
        };
        ItemsOfStep: {
            items: components["schemas"]["Step"][] | null;
        };
        LearnedFile: {
            content: string;
            etag: string;
            path: string;
        };
        LearnedItem: {
            description?: string;
            etag: string;
            kind: string;
            name?: string;
            path: string;
            problem?: string;
            type?: string;
        };
        LearningChange: {
            commit: string;
            path: string;
        };
        LearningCommit: {
            author: string;
            hash: string;
            message: string;
            /** Format: date-time */
            when: string;
        };
        LearningList: {
            agent: string;
            items: components["schemas"]["LearnedItem"][] | null;
            main: string;
        };
        LearningLog: {
            items: components["schemas"]["LearningCommit"][] | null;
        };
        ListOfAgent: {
            apiVersion?: string;
            items: components["schemas"]["Agent"][] | null;
            kind?: string;
        };
        ListOfAgentGroup: {
            apiVersion?: string;
            items: components["schemas"]["AgentGroup"][] | null;
            kind?: string;
        };
        ListOfAgentRun: {
            apiVersion?: string;
            items: components["schemas"]["AgentRun"][] | null;
            kind?: string;
        };
        ListOfEnvironment: {
            apiVersion?: string;
            items: components["schemas"]["Environment"][] | null;
            kind?: string;
        };
        ListOfTrigger: {
            apiVersion?: string;
            items: components["schemas"]["Trigger"][] | null;
            kind?: string;
        };
        ListOfWebhook: {
            apiVersion?: string;
            items: components["schemas"]["Webhook"][] | null;
            kind?: string;
        };
        ListTasksResponse: {
            nextPageToken: string;
            pageSize: number;
            tasks: components["schemas"]["A2aTask"][] | null;
            totalSize: number;
        };
        LoginAnswer: {
            session: string;
            user: string;
        };
        LoginBodyInput: {
            password?: string;
            setupCode?: string;
            user?: string;
        };
        MCPServer: {
            args?: string[];
            command?: string;
            env?: {
                [key: string]: string;
            };
            headers?: {
                [key: string]: string;
            };
            name: string;
            tools?: string[];
            url?: string;
        };
        MCPServerInput: {
            args?: string[] | null;
            command?: string;
            env?: {
                [key: string]: string;
            } | null;
            headers?: {
                [key: string]: string;
            } | null;
            name?: string;
            tools?: string[] | null;
            url?: string;
        };
        MCPTool: {
            description?: string;
            idempotent?: boolean;
            inputSchema?: unknown;
            name: string;
            readOnly?: boolean;
            ticked: boolean;
        };
        MCPToolList: {
            agent: string;
            missing?: string[];
            server: string;
            tools: components["schemas"]["MCPTool"][] | null;
        };
        Message: {
            /** @enum {string} */
            ifBusy?: "enqueue" | "reject" | "interrupt" | "rollback";
            messageKey?: string;
            payload: string;
            seq: number;
            /** Format: date-time */
            time: string;
        };
        MessageBodyInput: {
            /** @enum {string} */
            ifBusy?: "enqueue" | "reject" | "interrupt" | "rollback";
            messageKey?: string;
            payload?: string | null;
        };
        MessageInput: {
            contextId?: string;
            extensions?: string[] | null;
            messageId?: string;
            metadata?: {
                [key: string]: unknown;
            } | null;
            parts?: components["schemas"]["PartInput"][] | null;
            referenceTaskIds?: string[] | null;
            role?: string;
            taskId?: string;
        };
        MessagePostedAnswer: {
            created: boolean;
            message: components["schemas"]["Message"];
        };
        ModelSpec: {
            access?: string;
            apiKeySecret?: string;
            families?: string[];
            name?: string;
            provider?: string;
        };
        ModelSpecInput: {
            access?: string;
            apiKeySecret?: string;
            families?: string[] | null;
            name?: string;
            provider?: string;
        };
        ObjectMeta: {
            creationTimestamp?: string | null;
            generation?: number;
            labels?: {
                [key: string]: string;
            };
            name: string;
            resourceVersion?: string;
            uid?: string;
        };
        ObjectMetaInput: {
            creationTimestamp?: string | null;
            generation?: number;
            labels?: {
                [key: string]: string;
            } | null;
            name?: string;
            resourceVersion?: string;
            uid?: string;
        };
        Part: {
            data?: unknown;
            filename?: string;
            mediaType?: string;
            metadata?: {
                [key: string]: unknown;
            };
            raw?: string;
            text?: string | null;
            url?: string;
        };
        PartInput: {
            data?: unknown | null;
            filename?: string;
            mediaType?: string;
            metadata?: {
                [key: string]: unknown;
            } | null;
            raw?: string | null;
            text?: string | null;
            url?: string;
        };
        PricesAnswer: {
            families: {
                [key: string]: string;
            } | null;
            markup: string;
            models: components["schemas"]["Entry"][] | null;
            unit: string;
            version: string;
        };
        Principal: {
            Kind: string;
            User: string;
        };
        RequestInput: {
            id?: unknown | null;
            jsonrpc?: string;
            method?: string;
            params?: unknown | null;
        };
        ResolveBodyInput: {
            action?: string;
            result?: unknown | null;
            stepKey?: string;
        };
        Response: {
            error?: components["schemas"]["RPCError"] | null;
            id: unknown;
            jsonrpc: string;
            result?: unknown;
        };
        RestoreBodyInput: {
            from?: string;
            path?: string;
        };
        RotateBodyInput: {
            hold?: string;
        };
        Rotation: {
            previousValidUntil?: string | null;
            secret: string;
            secretRef: string;
        };
        RPCError: {
            code: number;
            data?: unknown;
            message: string;
        };
        RunCost: {
            billing?: string;
            limitUSD?: string;
            neededUSD?: string;
            totalUSD: string;
            vendorUSD?: string;
        };
        RunCostInput: {
            billing?: string;
            limitUSD?: string;
            neededUSD?: string;
            totalUSD?: string;
            vendorUSD?: string;
        };
        RunListBodyInput: {
            apiVersion?: string;
            items?: components["schemas"]["AgentRunInput"][] | null;
            kind?: string;
        };
        RunnerView: {
            /** Format: date-time */
            heartbeatAt: string;
            host: string;
            live: boolean;
            name: string;
            pid: number;
            runsHeld: number;
            sinceHeartbeat: string;
            /** Format: date-time */
            startedAt: string;
            version: string;
        };
        SecretBodyInput: {
            data?: {
                [key: string]: string;
            } | null;
        };
        SecretDeletedAnswer: {
            deleted: boolean;
            name: string;
        };
        SecretInfo: {
            keys: string[] | null;
            name: string;
            /** Format: date-time */
            updatedAt: string;
        };
        SecretSetAnswer: {
            keys: string[] | null;
            name: string;
            set: boolean;
        };
        SecurityRequirement: {
            schemes: {
                [key: string]: components["schemas"]["StringList"];
            } | null;
        };
        SecurityScheme: {
            httpAuthSecurityScheme?: components["schemas"]["HTTPAuthSecurityScheme"] | null;
        };
        SeedAgentBodyInput: {
            definition?: components["schemas"]["SeedDefinitionInput"];
        };
        SeedDefinitionInput: {
            computer?: components["schemas"]["ComputerSpecInput"] | null;
            harness?: string;
            id?: string;
            instructions?: string;
            learning?: boolean;
            maxTokens?: number;
            maxToolCalls?: number;
            model?: components["schemas"]["ModelSpecInput"] | null;
            name?: string;
            perRunMaxCostUSD?: string;
            skills?: string[] | null;
            tools?: string[] | null;
            version?: number;
        };
        SeedInputInput: string | {
            content?: string;
        };
        SeedRunBodyInput: {
            agent?: string;
            deadline?: string;
            input?: components["schemas"]["SeedInputInput"];
            keep_alive?: boolean;
            max_cost_usd?: string;
            name?: string;
        };
        SendMessageConfigurationInput: {
            acceptedOutputModes?: string[] | null;
            historyLength?: number | null;
            returnImmediately?: boolean;
            taskPushNotificationConfig?: unknown | null;
        };
        SendMessageRequestInput: {
            configuration?: components["schemas"]["SendMessageConfigurationInput"] | null;
            message?: components["schemas"]["MessageInput"] | null;
            metadata?: {
                [key: string]: unknown;
            } | null;
            tenant?: string;
        };
        SendMessageResponse: {
            message?: components["schemas"]["A2aMessage"] | null;
            task?: components["schemas"]["A2aTask"] | null;
        };
        Skill: {
            apiVersion?: string;
            kind?: string;
            metadata: components["schemas"]["ObjectMeta"];
            spec: components["schemas"]["SkillSpec"];
        };
        SkillFile: {
            base64?: boolean;
            content?: string;
            path: string;
        };
        SkillFileInput: {
            base64?: boolean;
            content?: string;
            path?: string;
        };
        SkillInput: {
            apiVersion?: string;
            kind?: string;
            metadata?: components["schemas"]["ObjectMetaInput"];
            spec?: components["schemas"]["SkillSpecInput"];
        };
        SkillList: {
            apiVersion?: string;
            items: components["schemas"]["Skill"][] | null;
            kind?: string;
        };
        SkillSpec: {
            description?: string;
            digest?: string;
            files: components["schemas"]["SkillFile"][] | null;
            version?: number;
        };
        SkillSpecInput: {
            description?: string;
            digest?: string;
            files?: components["schemas"]["SkillFileInput"][] | null;
            version?: number;
        };
        Step: {
            args?: unknown;
            argsHash?: string;
            attempt: number;
            completedAt?: string | null;
            copiedFrom?: string;
            costMicros?: number | null;
            error?: string;
            key: string;
            kind: string;
            resolution?: string;
            resolutionResult?: unknown;
            result?: unknown;
            rolledBack?: boolean;
            seq: number;
            /** Format: date-time */
            startedAt: string;
            state: string;
            title?: string;
        };
        StringList: {
            list: string[] | null;
        };
        Task: {
            answer?: unknown;
            id: string;
            prompt: string;
        };
        TaskInput: {
            answer?: unknown | null;
            id?: string;
            prompt?: string;
        };
        TaskResult: {
            meanReward?: number | null;
            passAtK?: {
                [key: string]: number;
            };
            passed: number;
            rewardSpread?: number | null;
            scored: number;
            taskId: string;
        };
        TaskResultInput: {
            meanReward?: number | null;
            passAtK?: {
                [key: string]: number;
            } | null;
            passed?: number;
            rewardSpread?: number | null;
            scored?: number;
            taskId?: string;
        };
        TaskStatus: {
            message?: components["schemas"]["A2aMessage"] | null;
            state: string;
            timestamp?: string;
        };
        TemplateApplied: {
            agent: components["schemas"]["Agent"] | null;
            skills?: string[];
            triggers?: components["schemas"]["TemplateTrigger"][];
        };
        TemplateApplyInput: {
            agent?: components["schemas"]["AgentInput"];
            skills?: components["schemas"]["SkillInput"][] | null;
            template?: string;
            triggers?: components["schemas"]["TriggerInput"][] | null;
        };
        TemplateTrigger: {
            kind: string;
            name: string;
            suspended?: boolean;
            suspendedFor?: string;
            webhookURL?: string;
        };
        TreeNode: {
            children?: ((components["schemas"]["TreeNode"] | null) | null)[];
            costMicros: number;
            costUnknown?: number;
            key: string;
            kind: string;
            label?: string;
            state: string;
            steps: number;
            value?: string;
        };
        Trigger: {
            apiVersion?: string;
            kind?: string;
            metadata: components["schemas"]["ObjectMeta"];
            spec: components["schemas"]["TriggerSpec"];
            status?: components["schemas"]["TriggerStatus"];
        };
        TriggerFire: {
            costUSD?: string;
            deliveryId?: string;
            key: string;
            message?: string;
            outcome: string;
            run?: string;
            runPhase?: string;
            scheduledTime?: string | null;
            source: string;
            /** Format: date-time */
            time: string;
            trigger: string;
        };
        TriggerFireInput: {
            costUSD?: string;
            deliveryId?: string;
            key?: string;
            message?: string;
            outcome?: string;
            run?: string;
            runPhase?: string;
            scheduledTime?: string | null;
            source?: string;
            /** Format: date-time */
            time?: string;
            trigger?: string;
        };
        TriggerGitHub: {
            actions?: string[];
            events?: string[];
            repositories?: string[];
            secretRef: string;
        };
        TriggerGitHubInput: {
            actions?: string[] | null;
            events?: string[] | null;
            repositories?: string[] | null;
            secretRef?: string;
        };
        TriggerInput: {
            apiVersion?: string;
            kind?: string;
            metadata?: components["schemas"]["ObjectMetaInput"];
            spec?: components["schemas"]["TriggerSpecInput"];
            status?: components["schemas"]["TriggerStatusInput"];
        };
        TriggerSchedule: {
            cron: string;
            missed?: string;
            timeZone?: string;
        };
        TriggerScheduleInput: {
            cron?: string;
            missed?: string;
            timeZone?: string;
        };
        TriggerSpec: {
            agent: string;
            concurrency?: string;
            github?: components["schemas"]["TriggerGitHub"] | null;
            group?: string;
            input?: string;
            maxCostUSD?: string;
            schedule?: components["schemas"]["TriggerSchedule"] | null;
            suspend?: boolean;
            testPayload?: unknown;
            webhook?: components["schemas"]["TriggerWebhook"] | null;
        };
        TriggerSpecInput: {
            agent?: string;
            concurrency?: string;
            github?: components["schemas"]["TriggerGitHubInput"] | null;
            group?: string;
            input?: string;
            maxCostUSD?: string;
            schedule?: components["schemas"]["TriggerScheduleInput"] | null;
            suspend?: boolean;
            testPayload?: unknown | null;
            webhook?: components["schemas"]["TriggerWebhookInput"] | null;
        };
        TriggerStatus: {
            kind?: string;
            lastFires?: components["schemas"]["TriggerFire"][];
            nextFireTime?: string | null;
            webhookURL?: string;
        };
        TriggerStatusInput: {
            kind?: string;
            lastFires?: components["schemas"]["TriggerFireInput"][] | null;
            nextFireTime?: string | null;
            webhookURL?: string;
        };
        TriggerTestAnswer: {
            event: unknown;
            input: unknown;
            run: components["schemas"]["AgentRun"];
            started: boolean;
            trigger: string;
        };
        TriggerWebhook: {
            secretRef: string;
        };
        TriggerWebhookInput: {
            secretRef?: string;
        };
        Turn: {
            cacheReadTokens?: number;
            cacheWrite1hTokens?: number;
            cacheWriteTokens?: number;
            chosenBy?: string;
            confidence?: number;
            costUSD?: string;
            family?: string;
            index: number;
            inputTokens?: number;
            model?: string;
            modelCalls?: number;
            outputTokens?: number;
            reasoningTokens?: number;
            routeCostUSD?: string;
        };
        TurnInput: {
            cacheReadTokens?: number;
            cacheWrite1hTokens?: number;
            cacheWriteTokens?: number;
            chosenBy?: string;
            confidence?: number;
            costUSD?: string;
            family?: string;
            index?: number;
            inputTokens?: number;
            model?: string;
            modelCalls?: number;
            outputTokens?: number;
            reasoningTokens?: number;
            routeCostUSD?: string;
        };
        WaitingOn: {
            detail?: string;
            kind: string;
            question?: string;
            stepKey?: string;
        };
        WaitingOnInput: {
            detail?: string;
            kind?: string;
            question?: string;
            stepKey?: string;
        };
        Webhook: {
            apiVersion?: string;
            kind?: string;
            metadata: components["schemas"]["ObjectMeta"];
            spec: components["schemas"]["WebhookSpec"];
            status?: components["schemas"]["WebhookStatus"];
        };
        WebhookAttempt: {
            attempt: number;
            delivered: boolean;
            durationMs: number;
            error?: string;
            statusCode?: number;
            /** Format: date-time */
            time: string;
        };
        WebhookAttemptInput: {
            attempt?: number;
            delivered?: boolean;
            durationMs?: number;
            error?: string;
            statusCode?: number;
            /** Format: date-time */
            time?: string;
        };
        WebhookDelivery: {
            agent?: string;
            attempts: number;
            history?: components["schemas"]["WebhookAttempt"][];
            id: string;
            nextAttempt?: string | null;
            run?: string;
            state: string;
            /** Format: date-time */
            time: string;
            trigger?: string;
            type: string;
            webhook: string;
        };
        WebhookDeliveryInput: {
            agent?: string;
            attempts?: number;
            history?: components["schemas"]["WebhookAttemptInput"][] | null;
            id?: string;
            nextAttempt?: string | null;
            run?: string;
            state?: string;
            /** Format: date-time */
            time?: string;
            trigger?: string;
            type?: string;
            webhook?: string;
        };
        WebhookInput: {
            apiVersion?: string;
            kind?: string;
            metadata?: components["schemas"]["ObjectMetaInput"];
            spec?: components["schemas"]["WebhookSpecInput"];
            status?: components["schemas"]["WebhookStatusInput"];
        };
        WebhookSpec: {
            agents?: string[];
            events: string[] | null;
            secretRef: string;
            url: string;
        };
        WebhookSpecInput: {
            agents?: string[] | null;
            events?: string[] | null;
            secretRef?: string;
            url?: string;
        };
        WebhookStatus: {
            lastDelivery?: components["schemas"]["WebhookDelivery"] | null;
            pending: number;
        };
        WebhookStatusInput: {
            lastDelivery?: components["schemas"]["WebhookDeliveryInput"] | null;
            pending?: number;
        };
        WorkflowError: {
            code: string;
            column: number;
            line: number;
            message: string;
            pointer: string;
        };
        WorkflowTree: {
            root?: components["schemas"]["TreeNode"] | null;
            run: string;
            workflow?: string;
        };
        WorkflowValidation: {
            errors: components["schemas"]["WorkflowError"][] | null;
            valid: boolean;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    get_healthz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description the store does not answer */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    get_livez: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    get_metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_readyz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description names the check that failed: store, schema or runner */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    get_SKILL_md: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/markdown": string;
                };
            };
        };
    };
    post_a2a__agent_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent: string;
            };
            cookie?: never;
        };
        /** @description a JSON-RPC 2.0 request; protocol errors are JSON-RPC errors in a 200 answer */
        requestBody: {
            content: {
                "application/json": components["schemas"]["RequestInput"];
            };
        };
        responses: {
            /** @description the JSON-RPC response, or for the streaming methods an SSE stream of JSON-RPC responses holding StreamResponses */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Response"];
                    "text/event-stream": string;
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_a2a__agent___well_known_agent_card_json: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentCard"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_a2a__agent___op_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent: string;
                op: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SendMessageRequestInput"];
            };
        };
        responses: {
            /** @description the task, or an SSE stream of StreamResponses */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SendMessageResponse"];
                    "text/event-stream": string;
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_a2a__agent__tasks: {
        parameters: {
            query?: {
                /** @description the tasks of this context (here: the one task of that id) */
                contextId?: string;
                /** @description at most this many history messages per task */
                historyLength?: number;
                /** @description true to include each task's artifacts */
                includeArtifacts?: boolean;
                /** @description 1 to 100; 50 when unset */
                pageSize?: number;
                /** @description the nextPageToken of the page before */
                pageToken?: string;
                /** @description the tasks in this state (TASK_STATE_COMPLETED, ...) */
                status?: string;
                /** @description the tasks whose status changed at or after this RFC 3339 time */
                statusTimestampAfter?: string;
            };
            header?: never;
            path: {
                agent: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ListTasksResponse"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_a2a__agent__tasks__id_: {
        parameters: {
            query?: {
                /** @description at most this many history messages */
                historyLength?: number;
            };
            header?: never;
            path: {
                agent: string;
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["A2aTask"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_a2a__agent__tasks__idop_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent: string;
                idop: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the task, or an SSE stream of StreamResponses */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["A2aTask"];
                    "text/event-stream": string;
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agentgroups: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ListOfAgentGroup"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_agentgroups: {
        parameters: {
            query?: {
                /** @description All: check the request as it would be made (validated, and checked against what it names on this server) and store nothing; the answer carries X-Agentrun-Dry-Run: All. Any other value is refused (422, field dryRun); so is a dry run of an AgentRunList */
                dryRun?: "All";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentGroupInput"];
            };
        };
        responses: {
            /** @description created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentGroup"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound, EnvironmentNotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AlreadyExists */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agentgroups__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentGroup"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    put_agentgroups__name_: {
        parameters: {
            query?: {
                /** @description All: check the request as it would be made (validated, and checked against what it names on this server) and store nothing; the answer carries X-Agentrun-Dry-Run: All. Any other value is refused (422, field dryRun); so is a dry run of an AgentRunList */
                dryRun?: "All";
            };
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentGroupInput"];
            };
        };
        responses: {
            /** @description updated or unchanged (X-Agentrun-Apply says which) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentGroup"];
                };
            };
            /** @description created (X-Agentrun-Apply: created) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentGroup"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound, EnvironmentNotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict, GroupCancelled */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    delete_agentgroups__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GroupDeletedAnswer"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    patch_agentgroups__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        /** @description a JSON merge patch of the resource */
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentGroupInput"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentGroup"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict, GroupCancelled */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_agentgroups__name__cancel: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentGroup"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agentgroups__name__results: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EvalResults"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agentruns: {
        parameters: {
            query?: {
                /** @description only this agent's runs */
                agent?: string;
                /** @description comma-separated spec.agent=A, status.phase=P, spec.group=G */
                fieldSelector?: string;
                /** @description only runs in this phase */
                phase?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ListOfAgentRun"];
                };
            };
            /** @description Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_agentruns: {
        parameters: {
            query?: {
                /** @description All: check the request as it would be made (validated, and checked against what it names on this server) and store nothing; the answer carries X-Agentrun-Dry-Run: All. Any other value is refused (422, field dryRun); so is a dry run of an AgentRunList */
                dryRun?: "All";
            };
            header?: {
                /** @description with an AgentRunList: a repeat with the same key and body answers the first result (200, Idempotent-Replayed: true); the same key with another body is 422 IdempotencyKeyReused */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentRunInput"] | components["schemas"]["SeedRunBodyInput"] | components["schemas"]["RunListBodyInput"];
            };
        };
        responses: {
            /** @description a replayed batch (Idempotent-Replayed: true) */
            200: {
                headers: {
                    /** @description true */
                    "Idempotent-Replayed"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ListOfAgentRun"];
                };
            };
            /** @description created: the run, or the list */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentRun"] | components["schemas"]["ListOfAgentRun"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound, GroupNotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentStopped, AlreadyExists, Conflict, GroupCancelled, GroupSealed, MaxPendingReached */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description IdempotencyKeyReused, Invalid, InvalidLabel, Required, SecretNotFound, UnknownField, UnpricedModel, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agentruns__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentRun"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    put_agentruns__name_: {
        parameters: {
            query?: {
                /** @description All: check the request as it would be made (validated, and checked against what it names on this server) and store nothing; the answer carries X-Agentrun-Dry-Run: All. Any other value is refused (422, field dryRun); so is a dry run of an AgentRunList */
                dryRun?: "All";
            };
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentRunInput"];
            };
        };
        responses: {
            /** @description updated or unchanged (X-Agentrun-Apply says which) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentRun"];
                };
            };
            /** @description created (X-Agentrun-Apply: created) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentRun"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound, GroupNotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentStopped, AlreadyExists, Conflict, GroupCancelled, GroupSealed, MaxPendingReached */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, SecretNotFound, UnknownField, UnpricedModel, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    delete_agentruns__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletedAnswer"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    patch_agentruns__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        /** @description a JSON merge patch: only spec.maxCostUSD */
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentRunInput"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentRun"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentRunFinished, Conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description CapNotRaised, Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agentruns__name__answer: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NoAnswer, NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agentruns__name__approvals: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ItemsOfApprovalView"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_agentruns__name__approvals__id_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DecisionBodyInput"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApprovalView"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PersonRequired */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_agentruns__name__cancel: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentRun"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentRunFinished */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agentruns__name__events: {
        parameters: {
            query?: {
                /** @description only events after this seq */
                after?: number;
            };
            header?: {
                /** @description text/event-stream for the stream */
                Accept?: string;
                /** @description resume the stream after this event's id (its seq) */
                "Last-Event-ID"?: string;
            };
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description JSON: up to 1000 events. SSE: `retry: 1000`, then one `id: SEQ` / `event: TYPE` / `data: EVENT-JSON` per event, `event: end` with `{phase, reason}` once the run finished, `: keepalive` comments */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ItemsOfEvent"];
                    "text/event-stream": string;
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description TooManyStreams */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agentruns__name__files__path_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
                path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description a file's bytes, or {items} listing a directory */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ItemsOfFileEntry"];
                    "application/octet-stream": string;
                };
            };
            /** @description Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description FileNotFound, NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_agentruns__name__fork: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ForkRequestInput"];
            };
        };
        responses: {
            /** @description created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentRun"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound, StepNotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AlreadyExists, RunPurged, StepNotCompleted */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agentruns__name__messages: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ItemsOfMessage"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_agentruns__name__messages: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["MessageBodyInput"];
            };
        };
        responses: {
            /** @description Accepted */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MessagePostedAnswer"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentRunFinished, RunBusy */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agentruns__name__nodes: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkflowTree"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_agentruns__name__resolve: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ResolveBodyInput"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentRun"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotResolvable */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agentruns__name__steps: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ItemsOfStep"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agents: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ListOfAgent"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_agents: {
        parameters: {
            query?: {
                /** @description All: check the request as it would be made (validated, and checked against what it names on this server) and store nothing; the answer carries X-Agentrun-Dry-Run: All. Any other value is refused (422, field dryRun); so is a dry run of an AgentRunList */
                dryRun?: "All";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentInput"] | components["schemas"]["SeedAgentBodyInput"];
            };
        };
        responses: {
            /** @description created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Agent"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AlreadyExists */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, SecretNotFound, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agents__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Agent"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    put_agents__name_: {
        parameters: {
            query?: {
                /** @description All: check the request as it would be made (validated, and checked against what it names on this server) and store nothing; the answer carries X-Agentrun-Dry-Run: All. Any other value is refused (422, field dryRun); so is a dry run of an AgentRunList */
                dryRun?: "All";
            };
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentInput"] | components["schemas"]["SeedAgentBodyInput"];
            };
        };
        responses: {
            /** @description updated or unchanged (X-Agentrun-Apply says which) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Agent"];
                };
            };
            /** @description created (X-Agentrun-Apply: created) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Agent"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, SecretNotFound, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    delete_agents__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletedAnswer"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    patch_agents__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        /** @description a JSON merge patch of the resource */
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentInput"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Agent"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, SecretNotFound, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agents__name__learning: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LearningList"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description LearningOff */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agents__name__learning_bundle: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description a v2 git bundle of main */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/x-git-bundle": string;
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description LearningOff */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agents__name__learning_files__path_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
                path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LearnedFile"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description LearningOff */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    delete_agents__name__learning_files__path_: {
        parameters: {
            query?: never;
            header?: {
                /** @description the file's current ETag */
                "If-Match"?: string;
            };
            path: {
                /** @description the resource's metadata.name */
                name: string;
                path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LearningChange"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description LearningOff */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PreconditionFailed */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Required */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agents__name__learning_log: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LearningLog"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description LearningOff */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_agents__name__learning_restore: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RestoreBodyInput"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LearningChange"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict, LearningOff */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_agents__name__mcp_tools__server_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
                server: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MCPToolList"];
                };
            };
            /** @description Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, SecretNotFound */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_agents__name__runs: {
        parameters: {
            query?: {
                /** @description All: check the request as it would be made (validated, and checked against what it names on this server) and store nothing; the answer carries X-Agentrun-Dry-Run: All. Any other value is refused (422, field dryRun); so is a dry run of an AgentRunList */
                dryRun?: "All";
            };
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SeedRunBodyInput"];
            };
        };
        responses: {
            /** @description created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentRun"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound, GroupNotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentStopped, AlreadyExists, Conflict, GroupCancelled, GroupSealed, MaxPendingReached */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, SecretNotFound, UnknownField, UnpricedModel, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_capabilities: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        [key: string]: unknown;
                    };
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_credits: {
        parameters: {
            query?: {
                /** @description at most this many entries */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Credits"];
                };
            };
            /** @description Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_credits: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AddCreditsBodyInput"];
            };
        };
        responses: {
            /** @description created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Credits"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_environments: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ListOfEnvironment"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_environments: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EnvironmentInput"];
            };
        };
        responses: {
            /** @description updated or unchanged (X-Agentrun-Apply says which) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Environment"];
                };
            };
            /** @description created (X-Agentrun-Apply: created) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Environment"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AlreadyExists, Conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_environments__ref_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                ref: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Environment"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description EnvironmentNotFound, NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    put_environments__ref_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                ref: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EnvironmentInput"];
            };
        };
        responses: {
            /** @description updated or unchanged (X-Agentrun-Apply says which) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Environment"];
                };
            };
            /** @description created (X-Agentrun-Apply: created) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Environment"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AlreadyExists, Conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_hooks__name_: {
        parameters: {
            query?: never;
            header?: {
                "webhook-id"?: string;
                "webhook-signature"?: string;
                "webhook-timestamp"?: string;
                "X-GitHub-Delivery"?: string;
                "X-GitHub-Event"?: string;
                "X-Hub-Signature-256"?: string;
            };
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        /** @description the sender's payload, verified by its signature */
        requestBody: {
            content: {
                "application/json": unknown;
            };
        };
        responses: {
            /** @description a repeated delivery, GitHub's ping, or an event the trigger ignores */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FireAnswer"] | components["schemas"]["HookPongAnswer"] | components["schemas"]["HookIgnoredAnswer"];
                };
            };
            /** @description a run started */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FireAnswer"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound, GroupNotFound, NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentStopped, AlreadyExists, Conflict, GroupCancelled, GroupSealed, MaxPendingReached */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, SecretNotFound, UnknownField, UnpricedModel, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_login: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["LoginBodyInput"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LoginAnswer"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description SetupFailed, SetupRequired, Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description RateLimited, TooManyRequests */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_logout: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description signed out */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PersonRequired */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_mcp: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_mcp: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description a JSON-RPC message of the Model Context Protocol */
        requestBody: {
            content: {
                "application/json": unknown;
            };
        };
        responses: {
            /** @description the JSON-RPC answer, or an SSE stream of progress notifications and the answer */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": unknown;
                    "text/event-stream": string;
                };
            };
            /** @description a notification or response accepted */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    delete_mcp: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description ended */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_openapi_json: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        [key: string]: unknown;
                    };
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_prices: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PricesAnswer"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_runners: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ItemsOfRunnerView"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_secrets: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ItemsOfSecretInfo"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    put_secrets__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SecretBodyInput"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SecretSetAnswer"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PersonRequired */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    delete_secrets__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SecretDeletedAnswer"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PersonRequired */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_skills: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SkillList"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_skills: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SkillInput"];
            };
        };
        responses: {
            /** @description updated or unchanged (X-Agentrun-Apply says which) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Skill"];
                };
            };
            /** @description created (X-Agentrun-Apply: created) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Skill"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_skills__ref_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                ref: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Skill"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_templates_apply: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TemplateApplyInput"];
            };
        };
        responses: {
            /** @description created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TemplateApplied"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description GroupNotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AlreadyExists */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_triggers: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ListOfTrigger"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_triggers: {
        parameters: {
            query?: {
                /** @description All: check the request as it would be made (validated, and checked against what it names on this server) and store nothing; the answer carries X-Agentrun-Dry-Run: All. Any other value is refused (422, field dryRun); so is a dry run of an AgentRunList */
                dryRun?: "All";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TriggerInput"];
            };
        };
        responses: {
            /** @description created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Trigger"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound, GroupNotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AlreadyExists */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_triggers__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Trigger"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    put_triggers__name_: {
        parameters: {
            query?: {
                /** @description All: check the request as it would be made (validated, and checked against what it names on this server) and store nothing; the answer carries X-Agentrun-Dry-Run: All. Any other value is refused (422, field dryRun); so is a dry run of an AgentRunList */
                dryRun?: "All";
            };
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TriggerInput"];
            };
        };
        responses: {
            /** @description updated or unchanged (X-Agentrun-Apply says which) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Trigger"];
                };
            };
            /** @description created (X-Agentrun-Apply: created) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Trigger"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound, GroupNotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    delete_triggers__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletedAnswer"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    patch_triggers__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        /** @description a JSON merge patch of the resource */
        requestBody: {
            content: {
                "application/json": components["schemas"]["TriggerInput"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Trigger"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound, GroupNotFound, NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_triggers__name__fire: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["FireBodyInput"];
            };
        };
        responses: {
            /** @description created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FireAnswer"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentNotFound, GroupNotFound, NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AgentStopped, AlreadyExists, Conflict, GroupCancelled, GroupSealed, MaxPendingReached */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, SecretNotFound, UnknownField, UnpricedModel, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_triggers__name__fires: {
        parameters: {
            query?: {
                /** @description at most this many entries */
                limit?: number;
            };
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FiresAnswer"];
                };
            };
            /** @description Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_triggers__name__rotate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RotateBodyInput"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Rotation"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PersonRequired */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_triggers__name__test: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["FireBodyInput"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TriggerTestAnswer"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_webhooks: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ListOfWebhook"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_webhooks: {
        parameters: {
            query?: {
                /** @description All: check the request as it would be made (validated, and checked against what it names on this server) and store nothing; the answer carries X-Agentrun-Dry-Run: All. Any other value is refused (422, field dryRun); so is a dry run of an AgentRunList */
                dryRun?: "All";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WebhookInput"];
            };
        };
        responses: {
            /** @description created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description AlreadyExists */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, UnknownField, UnknownWebhookEvent, WebhookBlocked, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_webhooks__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    put_webhooks__name_: {
        parameters: {
            query?: {
                /** @description All: check the request as it would be made (validated, and checked against what it names on this server) and store nothing; the answer carries X-Agentrun-Dry-Run: All. Any other value is refused (422, field dryRun); so is a dry run of an AgentRunList */
                dryRun?: "All";
            };
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WebhookInput"];
            };
        };
        responses: {
            /** @description updated or unchanged (X-Agentrun-Apply says which) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            /** @description created (X-Agentrun-Apply: created) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, InvalidLabel, Required, UnknownField, UnknownWebhookEvent, WebhookBlocked, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    delete_webhooks__name_: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletedAnswer"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_webhooks__name__deliveries: {
        parameters: {
            query?: {
                /** @description at most this many entries */
                limit?: number;
            };
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeliveriesAnswer"];
                };
            };
            /** @description Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_webhooks__name__rotate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RotateBodyInput"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Rotation"];
                };
            };
            /** @description DuplicateKey, Invalid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PersonRequired */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description PayloadTooLarge */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Invalid, Required, UnknownField, WrongType */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description StoreFull */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_webhooks__name__test: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the resource's metadata.name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the delivery, queued */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDelivery"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description NotFound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    get_whoami: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Principal"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    post_workflows_validate: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkflowValidation"];
                };
            };
            /** @description Unauthorized */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description ClientClosed */
            499: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal, StoreUnavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
}
