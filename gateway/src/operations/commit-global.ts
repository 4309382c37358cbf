// Global-scope UpdateConfig: a policy or setting that applies to every sandbox. It creates no
// operation (upstream returns none for global updates); supervisors learn of it through delivery.
// A change after which the global part alone (global policy and settings, what every sandbox
// receives at least) would not fit in a supervisor's bootstrap is refused (snapshot-cap.ts).

import { create, fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  PolicyStatus,
  SandboxPolicySchema,
  SettingValueSchema,
  UpdateConfigResponseSchema,
  type UpdateConfigRequest,
  type UpdateConfigResponse,
} from "openshell-config/raw";
import { policyHash, validatePolicy } from "../model/policy.js";
import type { GatewayDeps } from "../rpc/deps.js";
import { encodeMessage } from "../model/binary-encoder.js";
import type { PolicyRevisionRecord, SettingRecord, StoreTx } from "../store/store.js";
import { assertWithinSnapshotCap, DEFAULT_MAX_SNAPSHOT_BYTES, globalConfigurationBytes, type PolicyInForce } from "./snapshot-cap.js";

const GLOBAL = "";

function inForce(record: PolicyRevisionRecord | undefined): PolicyInForce | undefined {
  return record ? { policy: fromBinary(SandboxPolicySchema, record.policy), bytes: record.policy.length, hash: record.hash } : undefined;
}

/** Refuses a change after which the global part of every bootstrap would be over `maxBytes` and larger than before. */
async function checkSnapshotCap(
  tx: StoreTx,
  maxBytes: number,
  before: { readonly policy: PolicyRevisionRecord | undefined; readonly settings: readonly SettingRecord[] },
  after: { readonly policy: PolicyInForce | undefined; readonly version: number },
): Promise<void> {
  const size = globalConfigurationBytes(after.policy, await tx.settings(GLOBAL), after.version);
  await assertWithinSnapshotCap(size, maxBytes, async () => globalConfigurationBytes(inForce(before.policy), before.settings, before.policy?.version ?? 0), "the global configuration");
}

export async function commitGlobalUpdate(deps: Pick<GatewayDeps, "store" | "maxSnapshotBytes">, req: UpdateConfigRequest): Promise<UpdateConfigResponse> {
  const maxBytes = deps.maxSnapshotBytes ?? DEFAULT_MAX_SNAPSHOT_BYTES;
  return deps.store.transaction(async (tx) => {
    const latest = await tx.latestPolicyRevision(GLOBAL);
    const settingsBefore = await tx.settings(GLOBAL);
    let version = latest?.version ?? 0;
    let hash = latest?.hash ?? "";
    let revision = await tx.globalSettingsRevision();
    let deleted = false;
    if (req.policy) {
      validatePolicy(req.policy);
      const next = policyHash(req.policy);
      if (next !== hash) {
        version += 1;
        hash = next;
        const bytes = encodeMessage(SandboxPolicySchema, req.policy);
        await checkSnapshotCap(tx, maxBytes, { policy: latest, settings: settingsBefore }, { policy: { policy: req.policy, bytes: bytes.length, hash }, version });
        await tx.insertPolicyRevision({
          sandboxId: GLOBAL,
          version,
          policy: bytes,
          hash,
          status: PolicyStatus.PENDING,
          loadError: "",
          createdAt: new Date(),
          loadedAt: undefined,
          provenance: {},
        });
      }
    } else if (req.settingKey !== "") {
      const current = settingsBefore.find((s) => s.key === req.settingKey);
      if (req.deleteSetting) {
        if (current) {
          await tx.deleteSetting(GLOBAL, req.settingKey);
          await tx.setGlobalSettingsRevision((revision += 1n));
          deleted = true;
        }
      } else {
        if (!req.settingValue || req.settingValue.value.case === undefined) {
          throw new ConnectError("setting_value is required unless delete_setting is set", Code.InvalidArgument);
        }
        const value = encodeMessage(SettingValueSchema, req.settingValue);
        const same = current && Buffer.compare(Buffer.from(current.value), Buffer.from(value)) === 0;
        if (!same) {
          await tx.putSetting({ sandboxId: GLOBAL, key: req.settingKey, value });
          await checkSnapshotCap(tx, maxBytes, { policy: latest, settings: settingsBefore }, { policy: inForce(latest), version });
          await tx.setGlobalSettingsRevision((revision += 1n));
        }
      }
    }
    return create(UpdateConfigResponseSchema, { version, policyHash: hash, settingsRevision: revision, deleted });
  });
}

