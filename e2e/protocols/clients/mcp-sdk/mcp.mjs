// The official MCP TypeScript SDK's client against agentrun's /v2/mcp. It prints one JSON object
// of what it saw; the Go test (e2e/protocols) asserts on it. Env: AGENTRUN_URL, AGENTRUN_TOKEN.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const base = process.env.AGENTRUN_URL;
const token = process.env.AGENTRUN_TOKEN;
const out = {};

// A client without the token is refused before MCP starts.
try {
  const bare = new Client({ name: "agentrun-e2e-bare", version: "1.0.0" });
  await bare.connect(new StreamableHTTPClientTransport(new URL(base + "/v2/mcp")));
  out.unauthenticated = "connected";
} catch (e) {
  out.unauthenticated = String(e.message || e);
}

const client = new Client({ name: "agentrun-e2e", version: "1.0.0" });
let changed = 0;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { changed++; });
await client.connect(new StreamableHTTPClientTransport(new URL(base + "/v2/mcp"), {
  requestInit: { headers: { Authorization: "Bearer " + token } },
}));
out.serverInfo = client.getServerVersion();
out.listChanged = client.getServerCapabilities()?.tools?.listChanged === true;

const listed = await client.listTools();
out.tools = listed.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));

const call = async (name, args) => {
  const progress = [];
  const res = await client.callTool({ name, arguments: args }, undefined, {
    onprogress: (p) => progress.push(p.message),
    timeout: 120000,
    resetTimeoutOnProgress: true,
  });
  return { isError: !!res.isError, text: res.content.map((c) => c.text), structured: res.structuredContent, progress };
};

out.hello = await call("hello_agent", { input: "Say hello" });
out.careful = await call("careful", { input: "Count carefully" });
out.asks = await call("notes", { input: "Ask me which region to cover" });
const asked = out.asks.structured?.run_id;
out.answered = await call("send-message", { run_id: asked, message: "eu-west" });
out.getRun = await call("get-run", { run_id: out.hello.structured?.run_id });
out.listRuns = await call("list-runs", { agent: "hello-agent" });
out.greeted = await call("greeter", { who: "Ada" });
out.greetedAsText = await call("greeter", { input: JSON.stringify({ who: "Lin" }) });
out.badInput = await call("hello_agent", { input: 42 });
out.missingRun = await call("get-run", { run_id: "no-such-run" });

// An agent added through the REST API shows up as a tool, with a list_changed notification.
changed = 0;
const put = await fetch(base + "/v2/agents/late-comer", {
  method: "PUT",
  headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" },
  body: JSON.stringify({ metadata: { name: "late-comer" }, spec: { system: "You arrived late." } }),
});
out.putStatus = put.status;
for (let i = 0; i < 100 && changed === 0; i++) await new Promise((r) => setTimeout(r, 100));
out.changedAfterAdd = changed;
out.toolsAfterAdd = (await client.listTools()).tools.map((t) => t.name);
const del = await fetch(base + "/v2/agents/late-comer", { method: "DELETE", headers: { Authorization: "Bearer " + token } });
out.deleteStatus = del.status;
const before = changed;
for (let i = 0; i < 100 && changed === before; i++) await new Promise((r) => setTimeout(r, 100));
out.changedAfterDelete = changed - before;
out.toolsAfterDelete = (await client.listTools()).tools.map((t) => t.name);

await client.close();
console.log(JSON.stringify(out));
