// The "did you mean" lookup after a NotFound for --sandbox: when it asks, what it suggests, and
// that it never turns a failure into a hang or a second error.
import { describe, expect, it } from "vitest";
import type { ConfigClient } from "openshell-config";
import type { ContextValues } from "@connectrpc/connect";
import { ONE_ATTEMPT } from "../../cli/retry.js";
import { missingSandbox, suggestSandbox } from "../../cli/sandbox-suggest.js";

/** A client whose ListSandboxes answers with `names` (or runs `answer`), recording each request. */
function fakeClient(answer: (req: { workspaceScope: unknown; pageSize: number }, signal: AbortSignal) => Promise<string[]>) {
  const requests: unknown[] = [];
  const oneAttempt: boolean[] = [];
  const client = {
    raw: () => ({
      listSandboxes: async (req: { workspaceScope: unknown; pageSize: number }, opts: { signal: AbortSignal; contextValues?: ContextValues }) => {
        requests.push(req);
        oneAttempt.push(opts.contextValues?.get(ONE_ATTEMPT) ?? false);
        const names = await answer(req, opts.signal);
        return { sandboxes: names.map((name) => ({ metadata: { name } })), nextPageToken: "" };
      },
    }),
  } as unknown as ConfigClient;
  return { client, requests, oneAttempt };
}

describe("missingSandbox", () => {
  const cmd = { name: "policy get", sandbox: "web-1", workspace: undefined };
  it("names the command's sandbox after a NotFound about a sandbox", () => {
    expect(missingSandbox(cmd, { notFound: true, message: 'sandbox "web-1" not found' })).toBe("web-1");
  });
  it("asks nothing after any other failure, a NotFound about something else, or a command without a sandbox", () => {
    expect(missingSandbox(cmd, { message: "permission denied: no" })).toBeUndefined();
    expect(missingSandbox(cmd, { notFound: true, message: "update operation 0000 not found in workspace default" })).toBeUndefined();
    expect(missingSandbox({ name: "sandbox list" }, { notFound: true, message: 'sandbox "x" not found' })).toBeUndefined();
    expect(missingSandbox({ name: "policy get", sandbox: "" }, { notFound: true, message: 'sandbox "" not found' })).toBeUndefined();
  });
});

describe("suggestSandbox", () => {
  it("suggests the workspace's closest sandbox from one page, never the name typed", async () => {
    const { client, requests, oneAttempt } = fakeClient(async () => ["api", "frontend", "web-1"]);
    expect(await suggestSandbox(client, "web-l", "team-a", new AbortController().signal)).toBe('; did you mean "web-1"?');
    expect(requests).toHaveLength(1);
    // Tried once, without the CLI's retries or their "retrying" lines.
    expect(oneAttempt).toEqual([true]);
    expect(requests[0]).toMatchObject({ pageSize: 1000, workspaceScope: { selection: { case: "workspace", value: "team-a" } } });
  });

  it("suggests nothing when the name typed is listed after all (the NotFound was about something else)", async () => {
    const { client } = fakeClient(async () => ["web-1", "web-2"]);
    expect(await suggestSandbox(client, "web-1", undefined, new AbortController().signal)).toBe("");
  });

  it("compares no name longer than a sandbox name can be, and no typed name that long", async () => {
    // Without the bound the prefix rule would pick it: "web-1" begins it.
    const long = `web-1${"x".repeat(300)}`;
    const { client } = fakeClient(async () => [long, "api"]);
    expect(await suggestSandbox(client, "web-1", undefined, new AbortController().signal)).toBe("");
    const prefixed = fakeClient(async () => [`web-1-${"x".repeat(100)}`, "api"]);
    expect(await suggestSandbox(prefixed.client, "web-1", undefined, new AbortController().signal)).toBe(`; did you mean "web-1-${"x".repeat(100)}"?`);
    const never = fakeClient(async () => ["api"]);
    expect(await suggestSandbox(never.client, "y".repeat(300), undefined, new AbortController().signal)).toBe("");
    expect(never.requests).toHaveLength(0);
  });

  it("says nothing when no name is close", async () => {
    const { client } = fakeClient(async () => ["api", "db"]);
    expect(await suggestSandbox(client, "frontend-canary", undefined, new AbortController().signal)).toBe("");
  });

  it("says nothing when the listing fails or its signal ends first", async () => {
    const failing = fakeClient(async () => {
      throw new Error("permission denied");
    });
    expect(await suggestSandbox(failing.client, "web-l", undefined, new AbortController().signal)).toBe("");
    const hanging = fakeClient((_, signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))));
    const interrupt = new AbortController();
    setTimeout(() => interrupt.abort(new Error("interrupted")), 20);
    expect(await suggestSandbox(hanging.client, "web-l", undefined, interrupt.signal)).toBe("");
    // Its own budget ends a listing that never answers.
    const silent = fakeClient((_, signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))));
    expect(await suggestSandbox(silent.client, "web-l", undefined, new AbortController().signal, 30)).toBe("");
    expect(silent.requests).toHaveLength(1);
  });
});
