// Label selectors as kubectl reads them (src/rollout/label-selector.ts, exported by
// openshell-config/rollout): the one parser of the rollout's labelSelector, the command line's
// --selector (cli/selector.ts) and the dashboard. What each requirement matches, that a comma
// ANDs, what the gateway is sent (the equality part only) and when that says everything, and
// what a malformed selector's error says.

import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../../src/index.js";
import {
  formatLabelSelector as formatSelector,
  gatewayLabelSelector as gatewaySelector,
  isGatewayExact,
  matchesLabelSelector as matches,
  parseLabelSelector,
  type LabelSelector as Selector,
} from "../../src/rollout.js";

const sel = (...parts: string[]): Selector => parseLabelSelector(parts.join(","));
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

describe("reading", () => {
  it("reads the set forms the command line has always taken, as the dashboard now does too", () => {
    expect(parseLabelSelector("env in (dev,staging)")).toEqual({ requirements: [{ key: "env", op: "in", values: ["dev", "staging"] }] });
    expect(parseLabelSelector("tier notin (web, api),!legacy,team").requirements).toEqual([
      { key: "tier", op: "notin", values: ["web", "api"] },
      { key: "legacy", op: "!exists" },
      { key: "team", op: "exists" },
    ]);
  });

  it.each([
    ["env in (dev", 'labelSelector "env in (dev": "env in (" is not closed by ")"'],
    ["tier in web", 'labelSelector "tier in web": unexpected "in" after "tier"; expected =, ==, !=, in (…) or notin (…)'],
    ["env=dev,", 'labelSelector "env=dev,": empty requirement at position 9 (a comma must join two requirements)'],
    ["env=dev team=a", 'labelSelector "env=dev team=a": unexpected "t" at position 9; requirements are joined by ","'],
    ["=dev", 'labelSelector "=dev": expected a label key at position 1, found "="'],
    ["  ", 'labelSelector "  ": empty selector'],
  ])("refuses %j with InvalidArgumentError naming the field and where: %s", (text, message) => {
    let error: unknown;
    try {
      parseLabelSelector(text);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error).toMatchObject({ field: "labelSelector", message });
  });

  it("names the field its caller reads it from", () => {
    expect(() => parseLabelSelector("a in (b", "selector")).toThrow('selector "a in (b": "a in (" is not closed by ")"');
  });

  it("reads its own canonical text back to the same selector", () => {
    for (const text of ["env in (dev,staging),!legacy,team=a", "a!=b,c notin (d),e", "k="]) {
      expect(formatSelector(parseLabelSelector(text))).toBe(text);
    }
  });
});
