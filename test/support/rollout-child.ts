// A rollout in its own process, for the e2e tests that kill one mid-wave or mid-rollback and
// resume it elsewhere. Run: node --import tsx test/support/rollout-child.ts <url> <token> <state-file> <options-json>
// The options are RolloutOptions as JSON; `"resume": true` resumes the state file instead. Every
// state onState gives is written to the state file atomically (temp file + rename), and every
// event is printed as one JSON line on stdout, so the parent can kill this process at a chosen point.

import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { createConfigClient } from "../../src/index.js";
import { createNodeTransport } from "../../src/transport/node.js";
import { restoreRolloutState, rollout, type RolloutOptions } from "../../src/rollout.js";

const [url, token, stateFile, optionsJson] = process.argv.slice(2) as [string, string, string, string];
const client = createConfigClient({ transport: createNodeTransport({ baseUrl: url, protocol: "grpc" }), token });
const given = JSON.parse(optionsJson) as Omit<RolloutOptions, "resume"> & { resume?: boolean };
const { resume, ...rest } = given;
const options: RolloutOptions = resume === true ? { ...rest, resume: restoreRolloutState(readFileSync(stateFile, "utf8")) } : rest;

const line = (o: unknown) => process.stdout.write(`${JSON.stringify(o)}\n`);
const result = await rollout(client, {
  ...options,
  onState: (state) => {
    writeFileSync(`${stateFile}.tmp`, JSON.stringify(state));
    renameSync(`${stateFile}.tmp`, stateFile);
  },
  onProgress: (e) => {
    if (e.type === "finished") return;
    line({ type: e.type, ...("sandbox" in e ? { sandbox: e.sandbox } : {}), ...(e.type === "result" ? { sandbox: e.result.sandbox, status: e.result.status } : {}) });
  },
});
line({ type: "finished", phase: result.phase });
