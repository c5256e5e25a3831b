// A Standard Webhooks receiver: listens on 127.0.0.1:PORT, verifies every POST with the
// standardwebhooks library under the secret WEBHOOK_SECRET, answers 204 when it verifies (401
// otherwise), and appends one JSON line per delivery to OUT: {id, verified, error, payload}.
import { createServer } from "node:http";
import { appendFileSync } from "node:fs";
import { Webhook } from "standardwebhooks";

const [port, out] = process.argv.slice(2);
const wh = new Webhook(process.env.WEBHOOK_SECRET);
createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    const line = { id: req.headers["webhook-id"], verified: false };
    try {
      line.payload = wh.verify(body, req.headers);
      line.verified = true;
    } catch (e) {
      line.error = String(e && e.message);
    }
    appendFileSync(out, JSON.stringify(line) + "\n");
    res.writeHead(line.verified ? 204 : 401).end();
  });
}).listen(Number(port), "127.0.0.1", () => console.log("listening"));
