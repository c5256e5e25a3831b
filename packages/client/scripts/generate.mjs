// Generates src/schema.ts from the server's OpenAPI document with openapi-typescript.
//   node scripts/generate.mjs                 reads $AGENTRUN_URL/v2/openapi.json (token: $AGENTRUN_TOKEN)
//   node scripts/generate.mjs openapi.json    reads a saved document
//   node scripts/generate.mjs --check         fails when src/schema.ts differs from what the server's document gives
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { generateSchema, fetchDocument } from "./schema.mjs";

const out = fileURLToPath(new URL("../src/schema.ts", import.meta.url));
const args = process.argv.slice(2);
const check = args.includes("--check");
const file = args.find((a) => !a.startsWith("--"));
const doc = file ? JSON.parse(await readFile(file, "utf8")) : await fetchDocument(process.env.AGENTRUN_URL, process.env.AGENTRUN_TOKEN);
const text = await generateSchema(doc);
if (check) {
  const cur = await readFile(out, "utf8");
  if (cur !== text) {
    console.error("src/schema.ts is not what the server's OpenAPI document gives: run `npm run generate` against the server and commit it");
    process.exit(1);
  }
} else {
  await writeFile(out, text);
  console.error(`wrote ${out}`);
}
