// The six rollout-record methods of `openshell.v1.OpenShell` (our extension, rollouts.proto),
// described without the whole service so that only `openshell-config/rollout` loads their
// descriptors. A gateway without them answers UNIMPLEMENTED.

import type { GenService } from "@bufbuild/protobuf/codegenv2";
import { createServiceSubset } from "../rpc.js";
import {
  ApproveRolloutRequestSchema,
  CreateRolloutRequestSchema,
  GetRolloutRequestSchema,
  ListRolloutsRequestSchema,
  ListRolloutsResponseSchema,
  RolloutResponseSchema,
  UpdateRolloutRequestSchema,
  WatchRolloutsRequestSchema,
  WatchRolloutsResponseSchema,
} from "../gen/openshell/v1/rollouts_pb.js";

/** The rollout-record methods; wire-identical to the same methods of `OpenShell`. */
export type RolloutRecordService = GenService<{
  createRollout: { methodKind: "unary"; input: typeof CreateRolloutRequestSchema; output: typeof RolloutResponseSchema };
  getRollout: { methodKind: "unary"; input: typeof GetRolloutRequestSchema; output: typeof RolloutResponseSchema };
  listRollouts: { methodKind: "unary"; input: typeof ListRolloutsRequestSchema; output: typeof ListRolloutsResponseSchema };
  watchRollouts: { methodKind: "server_streaming"; input: typeof WatchRolloutsRequestSchema; output: typeof WatchRolloutsResponseSchema };
  updateRollout: { methodKind: "unary"; input: typeof UpdateRolloutRequestSchema; output: typeof RolloutResponseSchema };
  approveRollout: { methodKind: "unary"; input: typeof ApproveRolloutRequestSchema; output: typeof RolloutResponseSchema };
}>;

/** `OpenShell` reduced to the rollout-record methods. */
export const RolloutRecordRpc = createServiceSubset([
  ["CreateRollout", "unary", CreateRolloutRequestSchema, RolloutResponseSchema],
  ["GetRollout", "unary", GetRolloutRequestSchema, RolloutResponseSchema],
  ["ListRollouts", "unary", ListRolloutsRequestSchema, ListRolloutsResponseSchema],
  ["WatchRollouts", "server_streaming", WatchRolloutsRequestSchema, WatchRolloutsResponseSchema],
  ["UpdateRollout", "unary", UpdateRolloutRequestSchema, RolloutResponseSchema],
  ["ApproveRollout", "unary", ApproveRolloutRequestSchema, RolloutResponseSchema],
]) as RolloutRecordService;
