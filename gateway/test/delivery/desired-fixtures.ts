// Shared by the tests of the desired-state cache and of association: an in-memory SQLite store
// holding one sandbox on its own policy version 1, and policy bytes naming one host.

import { create, toBinary } from "@bufbuild/protobuf";
import { SandboxPolicySchema } from "openshell-config/raw";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { StoreTx } from "../../src/store/store.js";
import { policyRevision, sandbox } from "../store/store-fixtures.js";

export const policyBytes = (host: string) =>
  toBinary(SandboxPolicySchema, create(SandboxPolicySchema, { networkPolicies: { r: { name: "r", endpoints: [{ host, ports: [443] }] } } }));

/** A store with one sandbox at policy version 1 (and whatever `more` writes in the same transaction). */
export async function storeWithSandbox(more?: (tx: StoreTx) => Promise<void>) {
  const store = openSqliteStore(":memory:");
  const sb = sandbox({ policyVersion: 1, policyHash: "sha256:v1", settingsRevision: 0n, providers: [] });
  await store.transaction(async (tx) => {
    await tx.insertSandbox(sb);
    await tx.insertPolicyRevision(policyRevision(sb.id, 1, { policy: policyBytes("one.example.com") }));
    await more?.(tx);
  });
  return { store, sb };
}
