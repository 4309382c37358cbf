// What a change is, as the caller writes it: a policy (whole, or merge operations) or one setting
// (upsert or delete). Types only, below every module that builds, sends, records or resumes a
// change (update.ts, refs.ts, handle.ts, the rollout), so that none of them imports another for
// its types.

import type { MessageInitShape } from "@bufbuild/protobuf";
import type { PolicyMergeOperationSchema } from "./gen/openshell/v1/config_pb.js";
import type { SandboxPolicySchema } from "./gen/openshell/sandbox/v1/sandbox_pb.js";
import type { SettingInput } from "./convert/setting-types.js";

/** A SandboxPolicy as a protobuf message or a plain object of the same shape. */
export type SandboxPolicyInput = MessageInitShape<typeof SandboxPolicySchema>;
/** One policy merge operation as a protobuf message or a plain object. */
export type PolicyMergeOperationInput = MessageInitShape<typeof PolicyMergeOperationSchema>;

/** A policy change: a full replacement, or merge operations applied to the current policy. */
export type PolicyChange =
  | {
      /** The complete new policy; replaces the sandbox's current policy. */
      readonly policy: SandboxPolicyInput;
      /** Not allowed together with `policy`. */
      readonly mergeOperations?: undefined;
    }
  | {
      /** Operations applied in order to the sandbox's current policy; must not be empty. */
      readonly mergeOperations: readonly PolicyMergeOperationInput[];
      /** Not allowed together with `mergeOperations`. */
      readonly policy?: undefined;
    };

/** A settings change: upsert one key, or delete it. */
export type SettingChange =
  | {
      /** The setting's key. */
      readonly key: string;
      /** The value to store under `key`. */
      readonly value: SettingInput;
      /** Not allowed together with `value`. */
      readonly delete?: undefined;
    }
  | {
      /** The setting's key. */
      readonly key: string;
      /** Removes the setting. */
      readonly delete: true;
      /** Not allowed together with `delete`. */
      readonly value?: undefined;
    };
