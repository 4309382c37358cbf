// The provider environment a sandbox receives: the values of every attached provider, secret
// ones included. This snapshot travels only on the supervisor's own stream and is never logged.

import { create } from "@bufbuild/protobuf";
import {
  ProviderEnvironmentSnapshotSchema,
  ProviderValueClassification,
  type ProviderEnvironmentSnapshot,
} from "openshell-config/raw";
import type { SandboxRecord, Store } from "../store/store.js";

export async function buildProviderSnapshot(store: Pick<Store, "providerByName">, sb: SandboxRecord, policyHash: string): Promise<ProviderEnvironmentSnapshot> {
  const values = [];
  for (const name of sb.providers) {
    const provider = await store.providerByName(sb.workspace, name);
    for (const v of provider?.values ?? []) {
      values.push({
        name: v.name,
        value: v.value,
        classification: v.secret ? ProviderValueClassification.UNSPECIFIED : ProviderValueClassification.NON_SECRET,
      });
    }
  }
  return create(ProviderEnvironmentSnapshotSchema, {
    providerEnvRevision: sb.providerEnvRevision,
    values,
    policyHash,
  });
}
