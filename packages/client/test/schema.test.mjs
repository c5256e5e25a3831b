// src/schema.ts is generated from the server's OpenAPI document: this test generates it again from
// the document the running server serves (AGENTRUN_URL) and fails when the two differ.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { fetchDocument, generateSchema } from "../scripts/schema.mjs";

const skip = process.env.AGENTRUN_URL ? false : "AGENTRUN_URL is not set: run this through `go test ./e2e/api -run TestTSClient`";

test("src/schema.ts is what the served OpenAPI document generates", { skip }, async () => {
  const doc = await fetchDocument(process.env.AGENTRUN_URL, process.env.AGENTRUN_TOKEN);
  assert.equal(doc.openapi, "3.1.0");
  const want = await generateSchema(doc);
  const have = await readFile(new URL("../src/schema.ts", import.meta.url), "utf8");
  if (have !== want) {
    const a = have.split("\n"), b = want.split("\n");
    let i = 0;
    while (i < a.length && a[i] === b[i]) i++;
    assert.fail(`src/schema.ts is stale from line ${i + 1}: have ${JSON.stringify(a[i])}, the document gives ${JSON.stringify(b[i])}; ` +
      "run `npm run generate` with AGENTRUN_URL and AGENTRUN_TOKEN set (or `go test ./e2e/api -run TestTSClient -update-ts-schema`)");
  }
});
