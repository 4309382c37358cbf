// The five methods of service `openshell.v1.OpenShell` that the SDK calls, described without
// loading the whole service. The generated `OpenShell` descriptor pulls in every message of the
// gateway (sandbox lifecycle, the supervisor protocol), which would put roughly a third of the
// browser bundle into descriptors the SDK never uses. Connect needs only each method's name,
// kind and message schemas; a test checks these against the generated service so they cannot
// drift.

import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { GenService } from "@bufbuild/protobuf/codegenv2";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import {
  GetConfigUpdateOperationRequestSchema,
  GetConfigUpdateOperationResponseSchema,
  GetSandboxPolicyStatusRequestSchema,
  GetSandboxPolicyStatusResponseSchema,
  UpdateConfigRequestSchema,
  UpdateConfigResponseSchema,
  WatchConfigUpdateOperationsRequestSchema,
  WatchConfigUpdateOperationsResponseSchema,
} from "./gen/openshell/v1/config_pb.js";
import { GetSandboxConfigRequestSchema, GetSandboxConfigResponseSchema } from "./gen/openshell/sandbox/v1/sandbox_pb.js";

/** The service subset the SDK calls; wire-identical to the same methods of `OpenShell`. */
export type ConfigRpcService = GenService<{
  updateConfig: { methodKind: "unary"; input: typeof UpdateConfigRequestSchema; output: typeof UpdateConfigResponseSchema };
  getConfigUpdateOperation: {
    methodKind: "unary";
    input: typeof GetConfigUpdateOperationRequestSchema;
    output: typeof GetConfigUpdateOperationResponseSchema;
  };
  getSandboxPolicyStatus: {
    methodKind: "unary";
    input: typeof GetSandboxPolicyStatusRequestSchema;
    output: typeof GetSandboxPolicyStatusResponseSchema;
  };
  getSandboxConfig: {
    methodKind: "unary";
    input: typeof GetSandboxConfigRequestSchema;
    output: typeof GetSandboxConfigResponseSchema;
  };
  watchConfigUpdateOperations: {
    methodKind: "server_streaming";
    input: typeof WatchConfigUpdateOperationsRequestSchema;
    output: typeof WatchConfigUpdateOperationsResponseSchema;
  };
}>;

type MethodSpec = readonly [name: string, kind: DescMethod["methodKind"], input: DescMethod["input"], output: DescMethod["output"]];

/**
 * A service descriptor holding only `specs`, wire-identical to the same methods of
 * `openshell.v1.OpenShell`. Also used by the rollout module for ListSandboxes, so that its
 * descriptors load only with it.
 */
export function createServiceSubset(specs: readonly MethodSpec[]): DescService {
  const methods: DescMethod[] = [];
  const byLocalName: Record<string, DescMethod> = {};
  const service = {
    kind: "service",
    typeName: "openshell.v1.OpenShell",
    name: "OpenShell",
    methods,
    method: byLocalName,
    deprecated: false,
    toString: () => "service openshell.v1.OpenShell",
  } as unknown as DescService;
  for (const [name, methodKind, input, output] of specs) {
    const localName = name[0]!.toLowerCase() + name.slice(1);
    const m = {
      kind: "rpc",
      name,
      localName,
      parent: service,
      methodKind,
      input,
      output,
      idempotency: MethodOptions_IdempotencyLevel.IDEMPOTENCY_UNKNOWN,
      deprecated: false,
      toString: () => `rpc openshell.v1.OpenShell.${name}`,
    } as unknown as DescMethod;
    methods.push(m);
    byLocalName[localName] = m;
  }
  return service;
}

const service = createServiceSubset([
  ["UpdateConfig", "unary", UpdateConfigRequestSchema, UpdateConfigResponseSchema],
  ["GetConfigUpdateOperation", "unary", GetConfigUpdateOperationRequestSchema, GetConfigUpdateOperationResponseSchema],
  ["GetSandboxPolicyStatus", "unary", GetSandboxPolicyStatusRequestSchema, GetSandboxPolicyStatusResponseSchema],
  ["GetSandboxConfig", "unary", GetSandboxConfigRequestSchema, GetSandboxConfigResponseSchema],
  ["WatchConfigUpdateOperations", "server_streaming", WatchConfigUpdateOperationsRequestSchema, WatchConfigUpdateOperationsResponseSchema],
]);

/** The SDK's view of `openshell.v1.OpenShell`. */
export const ConfigRpc = service as ConfigRpcService;
