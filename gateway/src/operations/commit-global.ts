// Global-scope UpdateConfig: a policy or setting that applies to every sandbox. It creates no
// operation (upstream returns none for global updates); supervisors learn of it through delivery.

import { create } from "@bufbuild/protobuf";
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

const GLOBAL = "";

export async function commitGlobalUpdate(deps: Pick<GatewayDeps, "store">, req: UpdateConfigRequest): Promise<UpdateConfigResponse> {
  return deps.store.transaction(async (tx) => {
    const latest = await tx.latestPolicyRevision(GLOBAL);
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
        await tx.insertPolicyRevision({
          sandboxId: GLOBAL,
          version,
          policy: encodeMessage(SandboxPolicySchema, req.policy),
          hash,
          status: PolicyStatus.PENDING,
          loadError: "",
          createdAt: new Date(),
          loadedAt: undefined,
          provenance: {},
        });
      }
    } else if (req.settingKey !== "") {
      const current = (await tx.settings(GLOBAL)).find((s) => s.key === req.settingKey);
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
          await tx.setGlobalSettingsRevision((revision += 1n));
        }
      }
    }
    return create(UpdateConfigResponseSchema, { version, policyHash: hash, settingsRevision: revision, deleted });
  });
}

