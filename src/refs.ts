// Operation handles made, replayed and restored: references that let a wait resume anywhere, in
// another process, after a crash, after the gateway restarted. Their types are in handle.ts.

import { fromJson, toJson, type JsonObject } from "@bufbuild/protobuf";
import { UpdateConfigRequestSchema, type UpdateConfigRequest } from "./gen/openshell/v1/config_pb.js";
import { InvalidArgumentError } from "./errors.js";
import { HANDLE_KIND, isOperationHandle, type OperationHandle } from "./handle.js";

/** Builds a handle for a committed request. */
export function createHandle(
  request: UpdateConfigRequest,
  fields: { operationId: string | undefined; workspace: string | undefined; policyVersion: number | undefined },
): OperationHandle {
  const handle = {
    kind: HANDLE_KIND,
    sandbox: request.sandbox,
    idempotencyKey: request.idempotencyKey,
    dimension: request.settingKey !== "" ? "settings" : "policy",
  } as Record<string, unknown>;
  // The request's JSON is made when first read (JSON.stringify, a spread, a property read), not
  // for every update: most handles are never stored, and converting a whole policy to JSON is a
  // measurable share of the SDK's CPU per update. Enumerable, so the handle still looks and
  // serializes like plain data, with its keys in the same order. One getter for every handle: a
  // getter of its own per handle (a closure) gave each handle an accessor V8 could not share, so
  // every handle after the first was kept in dictionary mode.
  Object.defineProperty(handle, "request", { enumerable: true, configurable: true, get: requestJsonOf });
  if (fields.operationId) handle.operationId = fields.operationId;
  if (fields.workspace !== undefined) handle.workspace = fields.workspace;
  if (fields.policyVersion !== undefined) handle.policyVersion = fields.policyVersion;
  const h = handle as unknown as OperationHandle;
  requests.set(h, request);
  return h;
}

// The request each handle of this process was made from, so that waiting on it needs no
// round trip through JSON, and its JSON once read. Handles restored from text are not here and
// are parsed.
const requests = new WeakMap<object, UpdateConfigRequest>();
const requestJson = new WeakMap<object, JsonObject>();

/** The `request` getter of every handle made here: the request's JSON, made on first read. */
function requestJsonOf(this: object): JsonObject | undefined {
  let json = requestJson.get(this);
  if (json === undefined) {
    const request = requests.get(this);
    if (request === undefined) return undefined;
    json = toJson(UpdateConfigRequestSchema, { ...request, waitMode: 0, waitTimeout: undefined } as UpdateConfigRequest) as JsonObject;
    requestJson.set(this, json);
  }
  return json;
}

/** The wire request a handle replays. */
export function handleRequest(handle: OperationHandle): UpdateConfigRequest {
  const known = requests.get(handle);
  if (known !== undefined) return { ...known, waitMode: 0, waitTimeout: undefined } as UpdateConfigRequest;
  return fromJson(UpdateConfigRequestSchema, handle.request);
}

/**
 * Restores a handle from its JSON text or parsed value, checking that it is one. Throws
 * InvalidArgumentError naming the field that is wrong.
 *
 * @example
 * ```ts
 * import { restoreHandle } from "openshell-config";
 *
 * const { handle } = await client.updatePolicy({ sandbox: "agent-7", policy });
 * localStorage.setItem("pending", JSON.stringify(handle));
 *
 * // After a reload, or in another process that read the same text:
 * const completion = await client.awaitCompletion(restoreHandle(localStorage.getItem("pending")!));
 * ```
 */
export function restoreHandle(json: string | unknown): OperationHandle {
  let value: unknown = json;
  if (typeof json === "string") {
    try {
      value = JSON.parse(json);
    } catch (err) {
      throw new InvalidArgumentError("handle is not valid JSON", { field: "handle", cause: err });
    }
  }
  if (!isOperationHandle(value)) {
    throw new InvalidArgumentError(`handle.kind must be "${HANDLE_KIND}"`, { field: "handle.kind" });
  }
  for (const field of ["sandbox", "idempotencyKey"] as const) {
    if (typeof value[field] !== "string" || value[field] === "") {
      throw new InvalidArgumentError(`handle.${field} must be a non-empty string`, { field: `handle.${field}` });
    }
  }
  if (value.operationId !== undefined && typeof value.operationId !== "string") {
    throw new InvalidArgumentError("handle.operationId must be a string", { field: "handle.operationId" });
  }
  if (typeof value.request !== "object" || value.request === null) {
    throw new InvalidArgumentError("handle.request must be an object", { field: "handle.request" });
  }
  try {
    handleRequest(value);
  } catch (err) {
    throw new InvalidArgumentError("handle.request is not an UpdateConfigRequest", {
      field: "handle.request",
      cause: err,
    });
  }
  return value;
}
