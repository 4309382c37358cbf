// The settings card's model without a browser: a value typed as the command line's --type takes
// it, checked before anything is sent, with an error naming the field; stored values shown back.

import { describe, expect, it } from "vitest";
import { parseSetting, settingRows, settingText } from "../src/settings-model.js";

describe("parseSetting", () => {
  it("reads each type into the SDK's typed value", () => {
    expect(parseSetting("log_level", "string", "debug")).toEqual({ ok: true, key: "log_level", value: "debug" });
    expect(parseSetting("tracing", "bool", "true")).toEqual({ ok: true, key: "tracing", value: true });
    expect(parseSetting("max", "int", " -5 ")).toEqual({ ok: true, key: "max", value: -5n });
    expect(parseSetting("max", "int", "9223372036854775807")).toEqual({ ok: true, key: "max", value: 9223372036854775807n });
    expect(parseSetting("blob", "bytes-base64", "aGVsbG8=")).toEqual({ ok: true, key: "blob", value: new TextEncoder().encode("hello") });
    // An empty string is a value like any other.
    expect(parseSetting("note", "string", "")).toEqual({ ok: true, key: "note", value: "" });
  });

  it("refuses what the gateway would, naming the field", () => {
    expect(parseSetting("", "string", "x")).toMatchObject({ ok: false, field: "key" });
    expect(parseSetting(" padded", "string", "x")).toMatchObject({ ok: false, field: "key" });
    expect(parseSetting("k".repeat(257), "string", "x")).toMatchObject({ ok: false, field: "key" });
    expect(parseSetting("tracing", "bool", "yes")).toEqual({ ok: false, field: "value", message: 'value: a bool is true or false, not "yes"' });
    expect(parseSetting("max", "int", "64.5")).toMatchObject({ ok: false, field: "value" });
    expect(parseSetting("max", "int", "9223372036854775808")).toEqual({ ok: false, field: "value", message: "value: out of range for a 64-bit int" });
    expect(parseSetting("blob", "bytes-base64", "not base64!")).toMatchObject({ ok: false, field: "value" });
  });
});

describe("settingRows", () => {
  it("shows stored values with their type and scope, sorted by key, bytes as base64", () => {
    expect(
      settingRows({
        z: { value: "debug", scope: "sandbox" },
        a: { value: 64n, scope: "global" },
        m: { value: new Uint8Array([104, 105]), scope: "sandbox" },
      }),
    ).toEqual([
      { key: "a", type: "int", text: "64", scope: "global" },
      { key: "m", type: "bytes-base64", text: "aGk=", scope: "sandbox" },
      { key: "z", type: "string", text: "debug", scope: "sandbox" },
    ]);
    expect(settingText({ value: false, scope: "sandbox" })).toEqual({ type: "bool", text: "false" });
    expect(settingText({ value: undefined, scope: "unspecified" })).toEqual({ type: "unset", text: "" });
  });
});
