// Setting values as plain JavaScript values, mapped to and from the SettingValue oneof. This is
// the only place that knows the oneof, so callers never build protobuf messages for settings.

import { create } from "@bufbuild/protobuf";
import { SettingValueSchema, type SettingValue } from "../gen/openshell/sandbox/v1/sandbox_pb.js";
import { InvalidArgumentError } from "../errors.js";
import type { SettingInput, SettingOutput } from "./setting-types.js";

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Builds the wire message; throws InvalidArgumentError (naming `field`) for unrepresentable
 * values. The client's `updateSettings` calls it for you; this is for requests built by hand
 * with `openshell-config/raw`.
 *
 * @example
 * ```ts
 * import { toSettingValue } from "openshell-config";
 *
 * toSettingValue("debug"); // { value: { case: "stringValue", value: "debug" } }
 * toSettingValue(64); // { value: { case: "intValue", value: 64n } }: int64 on the wire
 * toSettingValue(1.5); // throws InvalidArgumentError: value must be a safe integer, …
 * ```
 */
export function toSettingValue(value: SettingInput, field = "value"): SettingValue {
  switch (typeof value) {
    case "string":
      return create(SettingValueSchema, { value: { case: "stringValue", value } });
    case "boolean":
      return create(SettingValueSchema, { value: { case: "boolValue", value } });
    case "number":
      if (!Number.isSafeInteger(value)) {
        throw new InvalidArgumentError(
          `${field} must be a safe integer, a bigint, a string, a boolean or bytes; got ${value}`,
          { field },
        );
      }
      return create(SettingValueSchema, { value: { case: "intValue", value: BigInt(value) } });
    case "bigint":
      if (value < INT64_MIN || value > INT64_MAX) {
        throw new InvalidArgumentError(`${field} does not fit in a signed 64-bit integer`, { field });
      }
      return create(SettingValueSchema, { value: { case: "intValue", value } });
    default:
      if (value instanceof Uint8Array) {
        return create(SettingValueSchema, { value: { case: "bytesValue", value } });
      }
      throw new InvalidArgumentError(
        `${field} must be a string, boolean, integer, bigint or Uint8Array`,
        { field },
      );
  }
}

/**
 * The plain value of a wire SettingValue; `undefined` when the oneof is unset. Integers come
 * back as `bigint`, whatever they were sent as.
 *
 * @example
 * ```ts
 * import { fromSettingValue, toSettingValue } from "openshell-config";
 * import { OpenShell } from "openshell-config/raw";
 *
 * fromSettingValue(toSettingValue(64)); // 64n
 *
 * // The gateway-wide settings, read through the raw client, as plain values:
 * const { settings } = await client.raw(OpenShell).getGatewayConfig({});
 * const plain = Object.fromEntries(Object.entries(settings).map(([key, value]) => [key, fromSettingValue(value)]));
 * ```
 */
export function fromSettingValue(value: SettingValue | undefined): SettingOutput | undefined {
  const v = value?.value;
  switch (v?.case) {
    case "stringValue":
    case "boolValue":
    case "intValue":
    case "bytesValue":
      return v.value;
    default:
      return undefined;
  }
}
