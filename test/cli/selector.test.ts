// Label selectors as kubectl reads them (cli/selector.ts): what each requirement matches, that a
// comma ANDs, what the gateway is sent (the equality part only) and when that says everything.

import { describe, expect, it } from "vitest";
import { formatSelector, gatewaySelector, isGatewayExact, matches, parseSelector, type Selector } from "../../cli/selector.js";

const sel = (...parts: string[]): Selector => parseSelector(parts)!;
const labels = { env: "dev", team: "a", empty: "" };

describe("matching", () => {
  it.each([
    ["env=dev", true],
    ["env==dev", true],
    ["env=prod", false],
    ["env!=prod", true],
    ["env!=dev", false],
    ["tier!=web", true],
    ["env in (dev,staging)", true],
    ["env in (prod)", false],
    ["tier in (web)", false],
    ["env notin (prod)", true],
    ["env notin (dev)", false],
    ["tier notin (web)", true],
    ["env", true],
    ["tier", false],
    ["!tier", true],
    ["!env", false],
    ["empty=", true],
    ["empty", true],
  ])("%j against env=dev,team=a,empty= is %s", (text, expected) => {
    expect(matches(sel(text), labels)).toBe(expected);
  });

  it("ANDs the requirements of one selector and of several", () => {
    expect(matches(sel("env=dev,team=a"), labels)).toBe(true);
    expect(matches(sel("env=dev,team=b"), labels)).toBe(false);
    expect(matches(sel("env=dev", "!team"), labels)).toBe(false);
    // One key, two values: nothing has both.
    expect(matches(sel("env=dev,env=staging"), labels)).toBe(false);
    expect(matches(sel("env=dev,env=staging"), { env: "staging" })).toBe(false);
  });

  it("does not take a label named like an Object property for one that is there", () => {
    expect(matches(sel("constructor"), {})).toBe(false);
    expect(matches(sel("!toString"), {})).toBe(true);
  });
});

describe("what the gateway is sent", () => {
  it("is the equality requirements, one per key, in kubectl's spacing", () => {
    expect(gatewaySelector(sel(" env = dev , team==a"))).toBe("env=dev,team=a");
    expect(gatewaySelector(sel("env in (a,b),!legacy"))).toBe("");
    expect(gatewaySelector(sel("env=dev,env=staging"))).toBe("env=dev");
  });

  it("says everything only for distinct keys with = or ==", () => {
    expect(isGatewayExact(sel("env=dev,team==a"))).toBe(true);
    expect(isGatewayExact(sel("env=dev,env=staging"))).toBe(false);
    expect(isGatewayExact(sel("env!=dev"))).toBe(false);
    expect(isGatewayExact(sel("env"))).toBe(false);
  });

  it("is printed back in canonical form", () => {
    expect(formatSelector(sel("env  in ( dev , staging )", "! legacy", "team == a"))).toBe("env in (dev,staging),!legacy,team=a");
  });
});
