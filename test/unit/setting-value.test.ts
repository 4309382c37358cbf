import { describe, expect, it } from "vitest";
import { fromSettingValue, toSettingValue } from "../../src/convert/setting-value.js";
import { InvalidArgumentError } from "../../src/errors.js";

describe("setting values", () => {
  it.each([
    ["a string", "strict", "stringValue", "strict"],
    ["a boolean", true, "boolValue", true],
    ["a safe integer, read back as bigint", 42, "intValue", 42n],
    ["a negative bigint", -(2n ** 63n), "intValue", -(2n ** 63n)],
    ["bytes", new Uint8Array([1, 2, 3]), "bytesValue", new Uint8Array([1, 2, 3])],
  ] as const)("round-trips %s", (_, input, wireCase, output) => {
    const wire = toSettingValue(input);
    expect(wire.value.case).toBe(wireCase);
    expect(fromSettingValue(wire)).toEqual(output);
  });

  it.each([
    ["a fraction", 1.5],
    ["an unsafe integer", 2 ** 60],
    ["NaN", Number.NaN],
    ["a bigint above int64", 2n ** 63n],
  ])("rejects %s with an error naming the field", (_, value) => {
    let err: unknown;
    try {
      toSettingValue(value as number, "value");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).field).toBe("value");
  });

  it("rejects values of other types", () => {
    expect(() => toSettingValue({} as unknown as string)).toThrow(InvalidArgumentError);
    expect(() => toSettingValue(null as unknown as string)).toThrow(/must be a string/);
  });

  it("reads an unset value as undefined", () => {
    expect(fromSettingValue(undefined)).toBeUndefined();
  });
});
