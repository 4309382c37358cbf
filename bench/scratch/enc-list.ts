// Scratch: what a 1,000-sandbox ListSandboxes page costs to encode, by protobuf-es's toBinary (what
// connect-node runs on every response, ours and the floor's alike) and by the gateway's compiled
// encoder (gateway/src/model/binary-encoder.ts), and whether the two write the same bytes.
//   node --import tsx bench/scratch/enc-list.ts
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { ListSandboxesResponseSchema, SandboxPhase, SandboxSchema, type SandboxPolicy } from "openshell-config/raw";
import { encodeMessage } from "../../gateway/src/model/binary-encoder.js";
import { policyFor } from "../lib/policies.js";

// The shape a READY sandbox is listed in (bench/scratch/list-size.ts prints a real one).
const sandboxes = Array.from({ length: 1000 }, (_, i) =>
  create(SandboxSchema, {
    metadata: { id: crypto.randomUUID(), name: `s${i}`, workspace: "default", resourceVersion: 2n, createdTime: timestampNow() },
    spec: { policy: policyFor("initial") as SandboxPolicy },
    status: {
      phase: SandboxPhase.READY,
      currentPolicyVersion: 1,
      desiredPolicyVersion: 1,
      policyEnforcement: { state: 1, policyVersion: 1, policyHash: "e9158bd537083323de4e47644342ec098d088c131d039a3501657016536ffd63", configRevision: 3703875404741950831n, reportedPolicyVersion: 1, outcome: 1, observedTime: timestampNow() },
    },
  }),
);
const page = create(ListSandboxesResponseSchema, { sandboxes, nextPageToken: "abc" });
const time = (f: () => Uint8Array): { ms: number; bytes: Uint8Array } => {
  let bytes = f();
  const t = performance.now();
  for (let i = 0; i < 20; i++) bytes = f();
  return { ms: (performance.now() - t) / 20, bytes };
};
for (let k = 0; k < 3; k++) {
  const a = time(() => toBinary(ListSandboxesResponseSchema, page));
  const b = time(() => encodeMessage(ListSandboxesResponseSchema, page));
  console.log(`toBinary ${a.ms.toFixed(2)} ms; compiled ${b.ms.toFixed(2)} ms; ${a.bytes.length} bytes; same bytes: ${Buffer.compare(a.bytes, b.bytes) === 0}`);
}
