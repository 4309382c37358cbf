// The floor supervisor: one process holding many ConnectSupervisor sessions on one HTTP/2
// connection (the transport settings of supervisor/src/fleet.ts), each answering its bootstrap
// and every ConfigUpdate at once with the messages the reference supervisor sends (result with
// requested = applied revision, admission, runtime ready), and doing nothing else: no state
// directory, no validation, no logging, no heartbeats, no reconnects. A provider-environment update
// (the floor gateway's --provider-too) is answered at once with the reference supervisor's provider result.
//   node --import tsx bench/floor/supervisor.ts --gateway URL --sandboxes N [--sandbox-prefix P]
// A stream that ends while the process is not stopping is an error: the process exits 1.

import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { OpenShell, type SupervisorMessage } from "openshell-config/raw";
import { sandboxNames } from "../lib/names.js";
import { answer, hello } from "./answers.js";
import { AsyncQueue } from "./queue.js";

const { values } = parseArgs({ options: { gateway: { type: "string" }, sandboxes: { type: "string" }, "sandbox-prefix": { type: "string" } } });
if (!values.gateway || !values.sandboxes) throw new Error("usage: --gateway URL --sandboxes N [--sandbox-prefix P]");
const names = sandboxNames(values["sandbox-prefix"] ?? "sandbox-", Number(values.sandboxes));
const instanceId = `floor-${process.pid}`;

// The same as supervisor/src/fleet.ts createSupervisorTransport: no compression, pinged while idle.
const transport = createGrpcTransport({ baseUrl: values.gateway, acceptCompression: [], pingIntervalMs: 15_000, pingTimeoutMs: 10_000 });
const client = createClient(OpenShell, transport);
let stopping = false;

async function session(sandboxId: string): Promise<void> {
  const out = new AsyncQueue<SupervisorMessage>();
  out.push(hello(sandboxId, instanceId));
  for await (const m of client.connectSupervisor(out)) answer(m, sandboxId, instanceId, (r) => out.push(r));
  throw new Error(`${sandboxId}: the gateway ended the stream`);
}

for (const name of names) {
  session(name).catch((err: unknown) => {
    if (stopping) return;
    process.stderr.write(`floor supervisor: ${(err as Error).message}\n`);
    process.exit(1);
  });
}

process.once("SIGTERM", () => {
  stopping = true;
  process.exit(0);
});
