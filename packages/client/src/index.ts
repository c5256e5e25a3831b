// @agentrun/client: a small client for the agentrun server's /v2 API over fetch, for Node 20+ and
// browsers. The types come from the server's OpenAPI document (src/schema.ts, generated); this
// file is the hand-written part: requests, errors, waiting on a run, and the timeline's SSE.
import type { components } from "./schema.js";

export type { components, paths } from "./schema.js";

type Schemas = components["schemas"];
export type Agent = Schemas["Agent"];
export type AgentInput = Schemas["AgentInput"];
export type AgentRun = Schemas["AgentRun"];
export type AgentRunInput = Schemas["AgentRunInput"];
export type AgentGroup = Schemas["AgentGroup"];
export type AgentGroupInput = Schemas["AgentGroupInput"];
export type Step = Schemas["Step"];
export type Message = Schemas["Message"];
export type TimelineEvent = Schemas["Event"];
export type EndEvent = Schemas["EndEvent"];
export type Approval = Schemas["ApprovalView"];
export type EvalResults = Schemas["EvalResults"];
export type Environment = Schemas["Environment"];
export type FileEntry = Schemas["FileEntry"];
export type ApiErrorBody = Schemas["Error"];
export type ErrorCode = ApiErrorBody["code"];
export type Phase = Schemas["AgentRunStatus"]["phase"];
/** What a message to a busy run does (the message's ifBusy, an agent's spec.ifBusy). */
export type IfBusy = NonNullable<Schemas["Message"]["ifBusy"]>;
export type List<T> = { apiVersion?: string; kind?: string; items: T[] | null };

/** An answer the server refused: its HTTP status and the stable code, message and field. */
export class AgentrunError extends Error {
  readonly status: number;
  readonly code: ErrorCode | string;
  readonly field?: string;
  constructor(status: number, body: Partial<ApiErrorBody>, fallback: string) {
    super(body.message ?? fallback);
    this.name = "AgentrunError";
    this.status = status;
    this.code = body.code ?? "Internal";
    this.field = body.field || undefined;
  }
}

/**
 * What waiting on a run came to, as the CLI's `runs wait` exit codes say it: 0 completed (or a
 * keep-alive run finished its turn), 1 failed or cancelled, 8 it waits on you.
 */
export const Outcome = {
  Completed: "completed",
  FailedOrCancelled: "failed-or-cancelled",
  WaitsOnYou: "waits-on-you",
} as const;
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

/** The CLI's exit code for each outcome. */
export const exitCode: Record<Outcome, number> = { completed: 0, "failed-or-cancelled": 1, "waits-on-you": 8 };

export interface WaitResult {
  outcome: Outcome;
  exitCode: number;
  run: AgentRun;
}

// The reasons a Waiting run waits on a person (api.WaitingOnPerson); Message is a keep-alive run
// between turns, which is done for a caller waiting on the turn.
const personReasons = new Set(["Question", "Approval", "MaxCostReached", "Credits", "StoreFull", "ModelKeyMissing"]);

/** outcomeOf says whether waiting on a run in this state is over, and how. */
export function outcomeOf(run: AgentRun): Outcome | undefined {
  const phase = run.status?.phase;
  const reason = run.status?.reason ?? "";
  if (phase === "Succeeded") return Outcome.Completed;
  if (phase === "Failed" || phase === "Cancelled") return Outcome.FailedOrCancelled;
  if (phase === "NeedsResolution") return Outcome.WaitsOnYou;
  if (phase === "Waiting" && personReasons.has(reason)) return Outcome.WaitsOnYou;
  if (phase === "Waiting" && reason === "Message") return Outcome.Completed;
  return undefined;
}

export interface ClientOptions {
  /** The server, such as http://127.0.0.1:7340 (default: AGENTRUN_URL in Node). */
  url?: string;
  /** The API token or a person's session (default: AGENTRUN_TOKEN in Node). */
  token?: string;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

const env = (name: string): string | undefined =>
  (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];

const seg = (s: string) => encodeURIComponent(s);
const filePath = (p: string) => p.split("/").map(encodeURIComponent).join("/");

export class Client {
  readonly url: string;
  private readonly token?: string;
  private readonly fetchFn: typeof fetch;

  constructor(opts: ClientOptions = {}) {
    const url = opts.url ?? env("AGENTRUN_URL");
    if (!url) throw new Error("no server: pass {url} or set AGENTRUN_URL");
    this.url = url.replace(/\/+$/, "");
    this.token = opts.token ?? env("AGENTRUN_TOKEN");
    this.fetchFn = opts.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** raw makes a request and returns the response when it is a success; else it throws AgentrunError. */
  async raw(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    let u = this.url + path;
    if (opts.query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(opts.query)) if (v !== undefined && v !== "") q.set(k, String(v));
      if ([...q].length) u += "?" + q.toString();
    }
    const headers: Record<string, string> = { ...opts.headers };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    let body: string | undefined;
    if (opts.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(opts.body);
    }
    const res = await this.fetchFn(u, { method, headers, body, signal: opts.signal });
    if (!res.ok) {
      const text = await res.text();
      let parsed: Partial<ApiErrorBody> = {};
      try {
        parsed = JSON.parse(text);
      } catch {
        // not the API's JSON error (a proxy's page, say): keep the text as the message
      }
      throw new AgentrunError(res.status, parsed, `${method} ${path}: HTTP ${res.status}: ${text.slice(0, 200)}`);
    }
    return res;
  }

  /** request makes a request and decodes its JSON answer. */
  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const res = await this.raw(method, path, opts);
    if (res.status === 204) return undefined as T;
    return (await res.json()) as T;
  }

  readonly agents = {
    list: () => this.request<List<Agent>>("GET", "/v2/agents"),
    get: (name: string) => this.request<Agent>("GET", `/v2/agents/${seg(name)}`),
    /** create takes an Agent resource or the seed's {definition: {...}}. */
    create: (agent: AgentInput | Schemas["SeedAgentBodyInput"]) => this.request<Agent>("POST", "/v2/agents", { body: agent }),
    apply: (agent: AgentInput & { metadata: { name: string } }) =>
      this.request<Agent>("PUT", `/v2/agents/${seg(agent.metadata.name)}`, { body: agent }),
    patch: (name: string, patch: AgentInput) => this.request<Agent>("PATCH", `/v2/agents/${seg(name)}`, { body: patch }),
    delete: (name: string) => this.request<Schemas["DeletedAnswer"]>("DELETE", `/v2/agents/${seg(name)}`),
  };

  readonly runs = {
    /** start starts a run of agent with the prompt (the seed's {input: {content}}). */
    start: (agent: string, input: string, opts: { name?: string; maxCostUSD?: string; keepAlive?: boolean; deadline?: string } = {}) =>
      this.request<AgentRun>("POST", `/v2/agents/${seg(agent)}/runs`, {
        body: { input: { content: input }, name: opts.name, max_cost_usd: opts.maxCostUSD, keep_alive: opts.keepAlive, deadline: opts.deadline },
      }),
    /** create creates a run from an AgentRun resource. */
    create: (run: AgentRunInput) => this.request<AgentRun>("POST", "/v2/agentruns", { body: run }),
    /** createBatch creates up to 100 runs, all or nothing; a repeat with the same key answers the first result. */
    createBatch: (runs: AgentRunInput[], idempotencyKey?: string) =>
      this.request<List<AgentRun>>("POST", "/v2/agentruns", {
        body: { apiVersion: "agentrun.dev/v1", kind: "AgentRunList", items: runs },
        headers: idempotencyKey ? { "Idempotency-Key": idempotencyKey } : {},
      }),
    get: (name: string) => this.request<AgentRun>("GET", `/v2/agentruns/${seg(name)}`),
    list: (filter: { agent?: string; phase?: Phase; group?: string } = {}) =>
      this.request<List<AgentRun>>("GET", "/v2/agentruns", {
        query: { agent: filter.agent, phase: filter.phase, fieldSelector: filter.group ? `spec.group=${filter.group}` : undefined },
      }),
    delete: (name: string) => this.request<Schemas["DeletedAnswer"]>("DELETE", `/v2/agentruns/${seg(name)}`),
    cancel: (name: string) => this.request<AgentRun>("POST", `/v2/agentruns/${seg(name)}/cancel`),
    /**
     * message sends a message; a key is delivered once however often it is sent. ifBusy says what
     * it does if the run has a turn in flight: "enqueue" (wait for the turn's end), "reject"
     * (refused with code RunBusy, nothing stored), "interrupt" (stop the turn now) or "rollback"
     * (discard the turn); left out, the agent's spec.ifBusy, else enqueue.
     */
    message: (name: string, payload: string, messageKey?: string, ifBusy?: IfBusy) =>
      this.request<Schemas["MessagePostedAnswer"]>("POST", `/v2/agentruns/${seg(name)}/messages`, { body: { payload, messageKey, ifBusy } }),
    messages: async (name: string) => (await this.request<List<Message>>("GET", `/v2/agentruns/${seg(name)}/messages`)).items ?? [],
    /** answer is the run's whole answer (status.answer holds a 4 KiB preview). */
    answer: async (name: string) => (await this.raw("GET", `/v2/agentruns/${seg(name)}/answer`)).text(),
    /** steps is the run's journal: each model and tool call, in order. */
    steps: async (name: string) => (await this.request<List<Step>>("GET", `/v2/agentruns/${seg(name)}/steps`)).items ?? [],
    /** files lists the run folder's files (under dir, if given). */
    files: async (name: string, dir = "") =>
      (await this.request<List<FileEntry>>("GET", `/v2/agentruns/${seg(name)}/files/${filePath(dir)}`)).items ?? [],
    /** readFile is one file of the run folder, as bytes. */
    readFile: async (name: string, path: string) =>
      new Uint8Array(await (await this.raw("GET", `/v2/agentruns/${seg(name)}/files/${filePath(path)}`)).arrayBuffer()),
    /** readText is one file of the run folder, as UTF-8 text. */
    readText: async (name: string, path: string) => (await this.raw("GET", `/v2/agentruns/${seg(name)}/files/${filePath(path)}`)).text(),
    /** raiseCap raises the run's cap to usd (a decimal string; raise only). */
    raiseCap: (name: string, usd: string) =>
      this.request<AgentRun>("PATCH", `/v2/agentruns/${seg(name)}`, { body: { spec: { maxCostUSD: usd } } }),
    /**
     * fork makes a new run holding the run's completed steps up to and including atStep (a key as
     * steps() shows it) and its folder as that step left it, which goes on live; message is a user
     * message at the fork point. The run itself is not changed.
     */
    fork: (name: string, atStep: string, opts: { name?: string; message?: string; maxCostUSD?: string } = {}) =>
      this.request<AgentRun>("POST", `/v2/agentruns/${seg(name)}/fork`, { body: { atStep, ...opts } }),
    resolve: (name: string, action: "retry" | "skip" | "complete", opts: { stepKey?: string; result?: unknown } = {}) =>
      this.request<AgentRun>("POST", `/v2/agentruns/${seg(name)}/resolve`, { body: { action, ...opts } }),
    /**
     * wait polls the run until waiting on it is over: it completed (or a keep-alive run finished
     * its turn), it failed or was cancelled, or it waits on you (a question, an approval, its cap,
     * ...). It rejects when timeoutMs passes first.
     */
    wait: async (name: string, opts: { timeoutMs?: number; intervalMs?: number; signal?: AbortSignal } = {}): Promise<WaitResult> => {
      const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
      const interval = opts.intervalMs ?? 500;
      for (;;) {
        const run = await this.request<AgentRun>("GET", `/v2/agentruns/${seg(name)}`, { signal: opts.signal });
        const outcome = outcomeOf(run);
        if (outcome) return { outcome, exitCode: exitCode[outcome], run };
        if (Date.now() + interval > deadline) {
          throw new Error(`run ${name} is still ${run.status?.phase ?? "new"} after ${opts.timeoutMs} ms`);
        }
        await sleep(interval, opts.signal);
      }
    },
  };

  /**
   * timeline yields the run's events as they happen (SSE), from the start or after the event id
   * `after`, and ends when the run finishes. A dropped connection is resumed with Last-Event-ID, so
   * no event is missed or repeated.
   */
  async *timeline(name: string, opts: { after?: number; signal?: AbortSignal; maxRetries?: number } = {}): AsyncGenerator<TimelineEvent, EndEvent | undefined> {
    let last = opts.after !== undefined ? String(opts.after) : "";
    let retryMs = 1000;
    let failures = 0;
    const maxRetries = opts.maxRetries ?? 5;
    for (;;) {
      const headers: Record<string, string> = { Accept: "text/event-stream" };
      if (last) headers["Last-Event-ID"] = last;
      let res: Response;
      try {
        res = await this.raw("GET", `/v2/agentruns/${seg(name)}/events`, { headers, signal: opts.signal });
      } catch (err) {
        // The server's refusal (404, 401, ...) is final; a network failure is tried again.
        if (err instanceof AgentrunError || opts.signal?.aborted || ++failures > maxRetries) throw err;
        await sleep(retryMs, opts.signal);
        continue;
      }
      if (!res.body) throw new Error("the timeline answer has no body");
      let progressed = false;
      try {
        for await (const ev of parseSSE(res.body)) {
          if (ev.retry !== undefined) retryMs = ev.retry;
          if (ev.event === "end") return JSON.parse(ev.data) as EndEvent;
          if (ev.event === "error") throw new Error(`timeline of ${name}: ${ev.data}`);
          if (ev.data === "") continue;
          if (ev.id !== undefined) last = ev.id;
          progressed = true;
          yield JSON.parse(ev.data) as TimelineEvent;
        }
      } catch (err) {
        if (opts.signal?.aborted) throw err;
        if (err instanceof Error && err.message.startsWith("timeline of")) throw err;
        // A broken stream: resume below.
      }
      if (progressed) failures = 0;
      else if (++failures > maxRetries) throw new Error(`timeline of ${name}: the stream ended ${failures} times without an event or its end`);
      await sleep(retryMs, opts.signal);
    }
  }

  /** events is one page of the timeline as JSON (up to 1000 events after `after`). */
  events = async (name: string, after?: number) =>
    (await this.request<List<TimelineEvent>>("GET", `/v2/agentruns/${seg(name)}/events`, { query: { after } })).items ?? [];

  readonly approvals = {
    /** list is the run's tool calls that asked for approval, pending and decided. */
    list: async (run: string) => (await this.request<List<Approval>>("GET", `/v2/agentruns/${seg(run)}/approvals`)).items ?? [],
    /** decide approves or denies one (a signed-in person's session only: the API token gets 403 PersonRequired). */
    decide: (run: string, id: number, decision: "approve" | "deny", reason?: string) =>
      this.request<Approval>("POST", `/v2/agentruns/${seg(run)}/approvals/${id}`, { body: { decision, reason } }),
  };

  readonly groups = {
    list: () => this.request<List<AgentGroup>>("GET", "/v2/agentgroups"),
    get: (name: string) => this.request<AgentGroup>("GET", `/v2/agentgroups/${seg(name)}`),
    create: (group: AgentGroupInput) => this.request<AgentGroup>("POST", "/v2/agentgroups", { body: group }),
    patch: (name: string, patch: AgentGroupInput) => this.request<AgentGroup>("PATCH", `/v2/agentgroups/${seg(name)}`, { body: patch }),
    seal: (name: string) => this.request<AgentGroup>("PATCH", `/v2/agentgroups/${seg(name)}`, { body: { spec: { sealed: true } } }),
    cancel: (name: string) => this.request<AgentGroup>("POST", `/v2/agentgroups/${seg(name)}/cancel`),
    delete: (name: string) => this.request<Schemas["GroupDeletedAnswer"]>("DELETE", `/v2/agentgroups/${seg(name)}`),
    /** runs lists the group's member runs. */
    runs: async (name: string) => (await this.runs.list({ group: name })).items ?? [],
    /** wait polls until the group's phase is one of the finished ones (Succeeded, Failed, Cancelled). */
    wait: async (name: string, opts: { timeoutMs?: number; intervalMs?: number; signal?: AbortSignal } = {}) => {
      const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
      const interval = opts.intervalMs ?? 500;
      for (;;) {
        const g = await this.groups.get(name);
        const phase = g.status?.phase;
        if (phase === "Succeeded" || phase === "Failed" || phase === "Cancelled") return g;
        if (Date.now() + interval > deadline) throw new Error(`group ${name} is still ${phase ?? "new"} after ${opts.timeoutMs} ms`);
        await sleep(interval, opts.signal);
      }
    },
  };

  readonly evaluations = {
    /** results is an evaluation group's per-case results and summary. */
    results: (group: string) => this.request<EvalResults>("GET", `/v2/agentgroups/${seg(group)}/results`),
    environments: () => this.request<List<Environment>>("GET", "/v2/environments"),
    environment: (ref: string) => this.request<Environment>("GET", `/v2/environments/${ref.split("/").map(encodeURIComponent).join("/")}`),
    load: (env: Schemas["EnvironmentInput"]) => this.request<Environment>("POST", "/v2/environments", { body: env }),
  };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

export interface SSEMessage {
  id?: string;
  event: string;
  data: string;
  retry?: number;
}

/** parseSSE reads a text/event-stream body into its messages (the WHATWG rules, comments skipped). */
export async function* parseSSE(body: ReadableStream<Uint8Array>): AsyncGenerator<SSEMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let id: string | undefined;
  let event = "";
  let data: string[] = [];
  let retry: number | undefined;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      // A "\r" at the end may be half of a "\r\n" split between chunks: wait for the next.
      while ((nl = buf.search(/\r\n|\r(?!$)|\n/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (data.length || retry !== undefined) yield { id, event: event || "message", data: data.join("\n"), retry };
          id = undefined;
          event = "";
          data = [];
          retry = undefined;
          continue;
        }
        if (line.startsWith(":")) continue;
        const i = line.indexOf(":");
        const field = i < 0 ? line : line.slice(0, i);
        let value2 = i < 0 ? "" : line.slice(i + 1);
        if (value2.startsWith(" ")) value2 = value2.slice(1);
        switch (field) {
          case "id":
            id = value2;
            break;
          case "event":
            event = value2;
            break;
          case "data":
            data.push(value2);
            break;
          case "retry":
            if (/^\d+$/.test(value2)) retry = Number(value2);
            break;
        }
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
