// The one way src/schema.ts is made, shared by the generator and the test that it is current.
import openapiTS, { astToString } from "openapi-typescript";

const header = "// Generated from the agentrun server's /v2/openapi.json by openapi-typescript\n// (npm run generate). Do not edit.\n\n";

export async function fetchDocument(base, token) {
  if (!base) throw new Error("AGENTRUN_URL is not set: say where the server is, or give a saved document");
  const res = await fetch(base.replace(/\/+$/, "") + "/v2/openapi.json", {
    headers: token ? { Authorization: `Bearer ${token}` } : {},
  });
  if (!res.ok) throw new Error(`GET /v2/openapi.json: HTTP ${res.status}: ${await res.text()}`);
  return res.json();
}

export async function generateSchema(doc) {
  const ast = await openapiTS(doc, { alphabetize: true });
  return header + astToString(ast);
}
