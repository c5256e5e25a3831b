// The client against a real agentrun server and its scripted model server: e2e/api/ts_client_test.go
// starts both and runs `npm test` with AGENTRUN_URL and AGENTRUN_TOKEN (the script's entries are
// in that file). Without AGENTRUN_URL these tests skip.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, AgentrunError, Outcome, outcomeOf, parseSSE } from "../dist/index.js";

const skip = process.env.AGENTRUN_URL ? false : "AGENTRUN_URL is not set: run these through `go test ./e2e/api -run TestTSClient`";
const client = skip ? undefined : new Client();

const notes = {
  definition: {
    id: "ts-notes", version: 1, name: "Notes", skills: [], tools: ["write", "ask_person"],
    instructions: "Do what you are asked, and write what you make to a file.",
  },
};
const gate = {
  apiVersion: "agentrun.dev/v1", kind: "Agent", metadata: { name: "ts-gate" },
  spec: { system: "Count.", tools: ["dev_count"], approvals: { default: "allow", rules: [{ match: "dev_count", action: "ask" }] } },
};

test("agents: create from the seed's definition and as a resource, get, list, patch, apply", { skip }, async () => {
  const a = await client.agents.create(notes);
  assert.equal(a.metadata.name, "ts-notes");
  assert.deepEqual(a.spec.tools, ["write", "ask_person"]);
  const g = await client.agents.create(gate);
  assert.equal(g.metadata.name, "ts-gate");
  assert.equal((await client.agents.get("ts-notes")).metadata.name, "ts-notes");
  const names = (await client.agents.list()).items.map((x) => x.metadata.name);
  assert.ok(names.includes("ts-notes") && names.includes("ts-gate"), `list: ${names}`);
  const p = await client.agents.patch("ts-gate", { metadata: { labels: { team: "qa" } } });
  assert.equal(p.metadata.labels?.team, "qa");
  const ap = await client.agents.apply({ ...gate, metadata: { name: "ts-gate", labels: { team: "qa" } } });
  assert.equal(ap.metadata.labels?.team, "qa");
});

test("errors carry the server's status, code and field", { skip }, async () => {
  await assert.rejects(client.agents.get("no-such-agent"), (err) => {
    assert.ok(err instanceof AgentrunError);
    assert.equal(err.status, 404);
    assert.equal(err.code, "NotFound");
    return true;
  });
  await assert.rejects(client.agents.create({ kind: "Agent", metadata: { name: "bad" }, spec: { system: "x", bogus: 1 } }), (err) => {
    assert.equal(err.status, 422);
    assert.equal(err.code, "UnknownField");
    assert.equal(err.field, "spec.bogus");
    return true;
  });
  await assert.rejects(client.runs.start("no-such-agent", "hello"), { status: 404, code: "AgentNotFound" });
  await assert.rejects(new Client({ token: "wrong" }).agents.list(), { status: 401, code: "Unauthorized" });
});

test("runs: start, wait (waits on you, then completed), message, answer, steps, files, live timeline", { skip }, async () => {
  const run = await client.runs.start("ts-notes", "Ask me which region to cover, then write region.md about it.", { maxCostUSD: "1" });
  const name = run.metadata.name;
  assert.match(name, /^ts-notes-/);
  assert.ok(run.status?.consoleURL?.endsWith(`/runs/${name}`), `consoleURL ${run.status?.consoleURL}`);

  // Follow the timeline while the run goes on: the iterator ends when the run finishes.
  const live = (async () => {
    const it = client.timeline(name);
    const seen = [];
    let r;
    while (!(r = await it.next()).done) seen.push(r.value);
    return { seen, end: r.value };
  })();

  const w1 = await client.runs.wait(name, { timeoutMs: 60_000 });
  assert.equal(w1.outcome, Outcome.WaitsOnYou);
  assert.equal(w1.exitCode, 8);
  assert.equal(w1.run.status?.reason, "Question");
  assert.equal(w1.run.status?.waitingOn?.question, "Which region should I cover?");

  // ifBusy: a mode the server does not know is refused, nothing stored; the run waits on a
  // person, so it is not busy and a reject is taken as any message.
  await assert.rejects(client.runs.message(name, "Asia", undefined, "later"), { status: 422, code: "Invalid", field: "ifBusy" });
  const m = await client.runs.message(name, "Europe", "answer-1", "reject");
  assert.equal(m.created, true);
  assert.equal(m.message.ifBusy, undefined, "a message to a run that is not busy is taken with no mode");
  const again = await client.runs.message(name, "Europe", "answer-1");
  assert.equal(again.created, false, "a message key is delivered once");

  const w2 = await client.runs.wait(name, { timeoutMs: 60_000 });
  assert.equal(w2.outcome, Outcome.Completed);
  assert.equal(w2.exitCode, 0);
  assert.equal(await client.runs.answer(name), "I wrote region.md.");
  const steps = await client.runs.steps(name);
  const tools = steps.filter((s) => /\/tool\//.test(s.key));
  assert.equal(tools.length, 2, `steps: ${steps.map((s) => `${s.key} ${s.kind} ${s.title}`)}`);
  assert.ok(tools.every((s) => s.state === "Completed"), `states: ${tools.map((s) => s.state)}`);
  assert.deepEqual(tools.map((s) => s.kind), ["question", "tool"]);
  assert.match(JSON.stringify(tools[1].args), /region\.md/);
  const files = await client.runs.files(name);
  assert.deepEqual(files.map((f) => f.path), ["region.md"]);
  assert.equal(await client.runs.readText(name, "region.md"), "# Europe\n\nNotes about Europe.\n");
  assert.deepEqual([...(await client.runs.readFile(name, "region.md")).slice(0, 2)], [0x23, 0x20]);
  await assert.rejects(client.runs.readText(name, "nope.md"), { status: 404, code: "FileNotFound" });
  assert.equal((await client.runs.messages(name)).length, 1);

  // A fork at the write: its folder is as the write left it, it goes on to the same answer, and
  // an unknown step is refused with its code.
  const fork = await client.runs.fork(name, tools[1].key, { maxCostUSD: "0.50" });
  assert.notEqual(fork.metadata.name, name);
  assert.equal((await client.runs.wait(fork.metadata.name, { timeoutMs: 60_000 })).outcome, Outcome.Completed);
  assert.equal(await client.runs.readText(fork.metadata.name, "region.md"), "# Europe\n\nNotes about Europe.\n");
  const copied = (await client.runs.steps(fork.metadata.name)).filter((s) => s.copiedFrom === name).map((s) => s.key);
  assert.equal(copied[copied.length - 1], tools[1].key);
  await assert.rejects(client.runs.fork(name, "t9/tool/0"), { status: 404, code: "StepNotFound" });

  const { seen, end } = await live;
  assert.equal(end?.phase, "Succeeded");
  const page = await client.events(name);
  assert.deepEqual(seen.map((e) => e.seq), page.map((e) => e.seq), "the live timeline is the whole timeline, in order, once");
  assert.ok(seen.some((e) => e.type === "message.received"), `types: ${seen.map((e) => e.type)}`);
  assert.equal(outcomeOf(await client.runs.get(name)), Outcome.Completed);
  const listed = (await client.runs.list({ agent: "ts-notes" })).items.map((r) => r.metadata.name);
  assert.ok(listed.includes(name));
});

test("timeline: resumes with Last-Event-ID after a dropped connection, nothing missed or repeated", { skip }, async () => {
  const run = await client.runs.start("ts-notes", "Say hello.");
  const name = run.metadata.name;
  assert.equal((await client.runs.wait(name, { timeoutMs: 60_000 })).outcome, Outcome.Completed);
  const all = await client.events(name);
  assert.ok(all.length >= 3, `events: ${all.length}`);

  // The first connection is cut after two events (the real server's bytes, stopped short); the
  // client must reconnect asking for what follows the last id it saw.
  const asked = [];
  let calls = 0;
  const cutting = async (url, init) => {
    asked.push(init.headers["Last-Event-ID"] ?? "");
    const res = await fetch(url, init);
    if (calls++ > 0) return res;
    const text = await res.text();
    const blocks = text.split("\n\n");
    let k = 0;
    for (let n = 0; n < 2; k++) if (/^id: /m.test(blocks[k])) n++;
    const bytes = new TextEncoder().encode(blocks.slice(0, k).join("\n\n") + "\n\n");
    // Erroring a stream drops what it holds unread: the bytes go on the first pull, the error on the next.
    let pulls = 0;
    const body = new ReadableStream({
      pull(c) {
        if (pulls++ === 0) c.enqueue(bytes);
        else c.error(new Error("connection reset"));
      },
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
  const resumed = new Client({ fetch: cutting });
  const it = resumed.timeline(name);
  const got = [];
  let r;
  while (!(r = await it.next()).done) got.push(r.value.seq);
  assert.deepEqual(got, all.map((e) => e.seq));
  assert.equal(r.value?.phase, "Succeeded");
  assert.deepEqual(asked, ["", String(all[1].seq)], "the second connection resumes after the second event");

  // And from a given id, as a caller resuming itself.
  const rest = [];
  for await (const ev of client.timeline(name, { after: all[0].seq })) rest.push(ev.seq);
  assert.deepEqual(rest, all.slice(1).map((e) => e.seq));
});

test("approvals: a waiting tool call is listed; the API token cannot decide it; cancel is failed-or-cancelled", { skip }, async () => {
  const run = await client.runs.create({ apiVersion: "agentrun.dev/v1", kind: "AgentRun", metadata: { name: "ts-gated" }, spec: { agent: "ts-gate", input: "Count once." } });
  const w = await client.runs.wait(run.metadata.name, { timeoutMs: 60_000 });
  assert.equal(w.outcome, Outcome.WaitsOnYou);
  assert.equal(w.run.status?.reason, "Approval");
  const list = await client.approvals.list("ts-gated");
  assert.equal(list.length, 1);
  assert.equal(list[0].tool, "dev_count");
  assert.equal(list[0].state, "pending");
  await assert.rejects(client.approvals.decide("ts-gated", list[0].id, "approve"), { status: 403, code: "PersonRequired" });
  await client.runs.cancel("ts-gated");
  // The cancel is applied by the runner: until then the run still waits on its approval.
  for (let i = 0; i < 300 && (await client.runs.get("ts-gated")).status?.phase !== "Cancelled"; i++) await new Promise((r) => setTimeout(r, 100));
  const done = await client.runs.wait("ts-gated", { timeoutMs: 60_000 });
  assert.equal(done.outcome, Outcome.FailedOrCancelled);
  assert.equal(done.exitCode, 1);
  assert.equal(done.run.status?.phase, "Cancelled");
  await assert.rejects(client.runs.message("ts-gated", "late"), { status: 409, code: "AgentRunFinished" });
});

test("runs: a batch with an Idempotency-Key answers the first result when repeated", { skip }, async () => {
  const items = [1, 2].map((i) => ({ metadata: { name: `ts-batch-${i}` }, spec: { agent: "ts-notes", input: `hello ${i}` } }));
  const first = await client.runs.createBatch(items, "ts-batch");
  const again = await client.runs.createBatch(items, "ts-batch");
  assert.deepEqual(again.items.map((r) => r.metadata.uid), first.items.map((r) => r.metadata.uid));
  await assert.rejects(client.runs.createBatch(items.slice(0, 1), "ts-batch"), { status: 422, code: "IdempotencyKeyReused" });
});

test("groups: create, add members, seal, wait, list members, delete", { skip }, async () => {
  const g = await client.groups.create({ apiVersion: "agentrun.dev/v1", kind: "AgentGroup", metadata: { name: "ts-group" }, spec: { agent: "ts-notes", limits: { maxActive: 2 } } });
  assert.equal(g.metadata.name, "ts-group");
  for (const k of ["a", "b"]) {
    await client.runs.create({ kind: "AgentRun", metadata: {}, spec: { agent: "ts-notes", group: "ts-group", taskKey: k, input: `hello ${k}` } });
  }
  await client.groups.seal("ts-group");
  const done = await client.groups.wait("ts-group", { timeoutMs: 60_000 });
  assert.equal(done.status?.phase, "Succeeded");
  const members = await client.groups.runs("ts-group");
  assert.deepEqual(members.map((r) => r.spec.taskKey).sort(), ["a", "b"]);
  assert.ok((await client.groups.list()).items.some((x) => x.metadata.name === "ts-group"));
  const del = await client.groups.delete("ts-group");
  assert.equal(del.runsDeleted, 2);
  await assert.rejects(client.groups.get("ts-group"), { status: 404 });
});

test("evaluations: an evaluation group over a built-in environment, its results", { skip }, async () => {
  const envs = (await client.evaluations.environments()).items.map((e) => `${e.metadata.name}`);
  assert.ok(envs.some((n) => n.includes("arithmetic")), `environments: ${envs}`);
  await client.agents.create({ apiVersion: "agentrun.dev/v1", kind: "Agent", metadata: { name: "ts-solver" }, spec: { system: "Answer with the number only." } });
  await client.groups.create({
    kind: "AgentGroup", metadata: { name: "ts-eval" },
    spec: { agent: "ts-solver", evaluation: { environment: "nodus/arithmetic-v2@2.0.0", split: "test", tasks: 2, repetitions: 1, seed: 5, timeout: "5m" } },
  });
  const g = await client.groups.wait("ts-eval", { timeoutMs: 120_000 });
  assert.equal(g.status?.phase, "Succeeded");
  assert.equal(g.status?.evaluation?.pending, 0);
  const res = await client.evaluations.results("ts-eval");
  assert.equal(res.group, "ts-eval");
  assert.equal(res.items?.length, 2);
  for (const c of res.items ?? []) assert.equal(c.state, "scored", JSON.stringify(c));
  await client.groups.delete("ts-eval");
});

test("parseSSE reads fields, multi-line data, comments and CRLF split across chunks", async () => {
  const chunks = ["retry: 1000\r\n\r", "\nid: 1\nevent: a\ndata: x\ndata: y\n\n: keep\n\n", "id: 2\nda", "ta: {}\n\n"];
  const body = new ReadableStream({
    start(c) {
      for (const s of chunks) c.enqueue(new TextEncoder().encode(s));
      c.close();
    },
  });
  const got = [];
  for await (const m of parseSSE(body)) got.push(m);
  assert.deepEqual(got, [
    { id: undefined, event: "message", data: "", retry: 1000 },
    { id: "1", event: "a", data: "x\ny", retry: undefined },
    { id: "2", event: "message", data: "{}", retry: undefined },
  ]);
});
