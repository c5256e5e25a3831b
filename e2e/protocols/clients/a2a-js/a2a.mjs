// The official A2A JS SDK's client against agentrun's /v2/a2a/AGENT, once per transport the card
// names (JSONRPC, HTTP+JSON). It prints one JSON object of what it saw; the Go test
// (e2e/protocols) asserts on it. Env: AGENTRUN_URL, AGENTRUN_TOKEN.
import { randomUUID } from "node:crypto";
import { Role, TaskState, taskStateToJSON } from "@a2a-js/sdk";
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } from "@a2a-js/sdk/client";

const base = process.env.AGENTRUN_URL;
const token = process.env.AGENTRUN_TOKEN;
const authFetch = (url, init = {}) => fetch(url, { ...init, headers: { ...(init.headers || {}), Authorization: "Bearer " + token } });
const agentURL = (agent) => base + "/v2/a2a/" + agent + "/";

const msg = (text, taskId) => ({
  messageId: randomUUID(), contextId: "", taskId: taskId ?? "", role: Role.ROLE_USER,
  parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
  metadata: undefined, extensions: [], referenceTaskIds: [],
});
const send = (text, taskId) => ({ tenant: "", message: msg(text, taskId), configuration: undefined, metadata: undefined });
const partText = (p) => (p.content?.$case === "text" ? p.content.value : JSON.stringify(p.content));
const task = (t) => ({
  id: t.id, contextId: t.contextId, state: taskStateToJSON(t.status?.state),
  status: t.status?.message ? t.status.message.parts.map(partText).join("") : "",
  artifacts: (t.artifacts || []).map((a) => ({ id: a.artifactId, text: a.parts.map(partText).join("") })),
  history: (t.history || []).map((m) => m.parts.map(partText).join("")),
});
const errName = async (f) => { try { await f(); return "no error"; } catch (e) { return e.name + ": " + e.message; } };

const out = {};
const resolver = new DefaultAgentCardResolver({ fetchImpl: authFetch });
out.unauthenticatedCard = await errName(() => new DefaultAgentCardResolver().resolve(agentURL("hello-agent")));
const card = await resolver.resolve(agentURL("hello-agent"));
out.card = { name: card.name, version: card.version, streaming: card.capabilities?.streaming,
  interfaces: card.supportedInterfaces.map((i) => i.protocolBinding + " " + i.protocolVersion + " " + i.url),
  security: Object.keys(card.securitySchemes || {}), skills: card.skills.map((s) => s.id) };

const factoryFor = (binding) => new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch }), new RestTransportFactory({ fetchImpl: authFetch })],
  preferredTransports: [binding],
  cardResolver: resolver,
}));

for (const binding of ["JSONRPC", "HTTP+JSON"]) {
  const factory = factoryFor(binding);
  const r = {};
  const hello = await factory.createFromUrl(agentURL("hello-agent"));
  r.protocol = hello.protocolVersion;
  const sent = await hello.sendMessage(send("Say hello"));
  r.sent = task(sent);
  const events = [];
  for await (const ev of hello.sendMessageStream(send("Say hello"))) {
    const v = ev.payload?.value;
    switch (ev.payload?.$case) {
      case "task": events.push("task " + taskStateToJSON(v.status?.state)); break;
      case "statusUpdate": events.push("status " + taskStateToJSON(v.status?.state) + " " + (v.status?.message?.parts || []).map(partText).join("")); break;
      case "artifactUpdate": events.push("artifact " + v.artifact.artifactId + " " + v.artifact.parts.map(partText).join("")); break;
      default: events.push("other " + JSON.stringify(ev));
    }
  }
  r.streamed = events;
  r.got = task(await hello.getTask({ tenant: "", id: sent.id, historyLength: undefined }));
  r.missing = await errName(() => hello.getTask({ tenant: "", id: "no-such-task", historyLength: undefined }));
  r.cancelFinished = await errName(() => hello.cancelTask({ tenant: "", id: sent.id, metadata: undefined }));

  const notes = await factory.createFromUrl(agentURL("notes"));
  const asked = await notes.sendMessage(send("Ask me which region to cover"));
  r.asked = task(asked);
  r.answered = task(await notes.sendMessage(send("eu-west", asked.id)));
  const again = await notes.sendMessage(send("Ask me which region to cover"));
  r.cancelled = task(await notes.cancelTask({ tenant: "", id: again.id, metadata: undefined }));
  r.afterCancel = await errName(() => notes.sendMessage(send("too late", again.id)));

  const careful = await factory.createFromUrl(agentURL("careful"));
  r.approval = task(await careful.sendMessage(send("Count carefully")));
  out[binding] = r;
}
// ListTasks, once both bindings have made notes' tasks (two answered, two cancelled).
const list = (extra) => ({ tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: undefined, pageToken: "",
  historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: undefined, ...extra });
const listed = (r) => ({ ids: r.tasks.map((t) => t.id), states: r.tasks.map((t) => taskStateToJSON(t.status?.state)),
  artifacts: r.tasks.map((t) => (t.artifacts || []).length), history: r.tasks.map((t) => (t.history || []).length),
  next: r.nextPageToken, pageSize: r.pageSize, totalSize: r.totalSize });
out.list = {};
for (const binding of ["JSONRPC", "HTTP+JSON"]) {
  const notes = await factoryFor(binding).createFromUrl(agentURL("notes"));
  const l = {};
  l.all = listed(await notes.listTasks(list({})));
  l.pages = [];
  let token = "";
  do {
    const page = listed(await notes.listTasks(list({ pageSize: 1, pageToken: token })));
    l.pages.push(page);
    token = page.next;
  } while (token && l.pages.length < 10);
  l.completed = listed(await notes.listTasks(list({ status: TaskState.TASK_STATE_COMPLETED, includeArtifacts: true, historyLength: 1 })));
  l.context = listed(await notes.listTasks(list({ contextId: l.all.ids[0] })));
  l.noContext = listed(await notes.listTasks(list({ contextId: "no-such-task" })));
  l.future = listed(await notes.listTasks(list({ statusTimestampAfter: "2999-01-01T00:00:00Z" })));
  l.tooBig = await errName(() => notes.listTasks(list({ pageSize: 101 })));
  l.badToken = await errName(() => notes.listTasks(list({ pageToken: "not-a-token" })));
  out.list[binding] = l;
}
console.log(JSON.stringify(out));
