// The agentrun extension for pi (loaded with -e, as TypeScript, no build). pi has no MCP client,
// so this registers the run's tools (listed in the config file AGENTRUN_PI_CONFIG names) as pi
// tools whose execute forwards each call to the run's MCP endpoint on the agentrun gateway: every
// call is a journal step there, under the run's approvals, computer and caps. pi's own tools are
// off (--no-builtin-tools), so these are all the tools its model sees.
import { readFileSync } from "node:fs";

type Tool = { name: string; description: string; inputSchema: Record<string, unknown> };
type Config = { mcpURL: string; headers: Record<string, string>; tools: Tool[] };

export default function (pi: any) {
	const conf: Config = JSON.parse(readFileSync(process.env.AGENTRUN_PI_CONFIG as string, "utf8"));
	let nextID = 1;

	// One JSON-RPC request to the MCP endpoint (streamable HTTP; the gateway answers plain JSON and
	// keeps no session, so no initialize round trip is needed; an SSE answer is read too).
	async function rpc(method: string, params: unknown, signal?: AbortSignal): Promise<any> {
		const res = await fetch(conf.mcpURL, {
			method: "POST",
			headers: { ...conf.headers, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
			body: JSON.stringify({ jsonrpc: "2.0", id: nextID++, method, params }),
			signal,
		});
		const text = await res.text();
		if (!res.ok) throw new Error(`agentrun MCP ${method}: HTTP ${res.status}: ${text.slice(0, 500)}`);
		let body = text;
		if ((res.headers.get("content-type") ?? "").includes("text/event-stream")) {
			body = text
				.split("\n")
				.filter((l) => l.startsWith("data:"))
				.map((l) => l.slice(5).trim())
				.pop() ?? "";
		}
		const msg = JSON.parse(body);
		if (msg.error) throw new Error(`agentrun MCP ${method}: ${msg.error.message ?? JSON.stringify(msg.error)}`);
		return msg.result;
	}

	// pi runs sibling tool calls in parallel; they go to the gateway one after another, in the
	// order the model listed them, so a replay after a restart numbers them the same way.
	let queue: Promise<unknown> = Promise.resolve();

	for (const t of conf.tools) {
		pi.registerTool({
			name: t.name,
			label: t.name,
			description: t.description,
			parameters: t.inputSchema,
			async execute(_id: string, params: unknown, signal?: AbortSignal) {
				const run = queue.then(() => rpc("tools/call", { name: t.name, arguments: params ?? {} }, signal));
				queue = run.catch(() => undefined);
				const r = await run;
				const text = (r?.content ?? [])
					.filter((c: any) => c.type === "text")
					.map((c: any) => c.text)
					.join("\n");
				// Throwing is how a pi tool reports an error result to its model.
				if (r?.isError) throw new Error(text);
				return { content: [{ type: "text", text }], details: {} };
			},
		});
	}
}
