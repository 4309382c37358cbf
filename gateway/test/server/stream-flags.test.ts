// The gateway's command-line knobs for supervisor streams: --max-supervisor-streams caps the
// streams one gateway serves, --supervisor-write-timeout bounds a stuck write.

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { OpenShell, type SupervisorMessage } from "openshell-config/raw";
import { parseCommandLine, UsageError } from "../../src/config.js";
import { run } from "./gateway-process.js";

const base = ["serve", "--db", "sqlite::memory:", "--port", "0", "--no-auth"];

describe("supervisor stream flags", () => {
  it("are parsed, and refused with a usage error when malformed", () => {
    const parsed = parseCommandLine([...base, "--max-supervisor-streams", "50000", "--supervisor-write-timeout", "45s"]);
    expect(parsed).toMatchObject({ kind: "serve", config: { maxSupervisorStreams: 50_000, supervisorWriteTimeoutMs: 45_000 } });
    expect(() => parseCommandLine([...base, "--max-supervisor-streams", "0"])).toThrow(UsageError);
    expect(() => parseCommandLine([...base, "--max-supervisor-streams", "0"])).toThrow('--max-supervisor-streams "0": expected a positive integer');
    expect(() => parseCommandLine([...base, "--supervisor-write-timeout", "soon"])).toThrow(/^--supervisor-write-timeout "soon"/);
  });

  it("--max-supervisor-streams 1: the gateway executable refuses a second stream RESOURCE_EXHAUSTED naming the cap", async () => {
    const gw = run([...base, "--max-supervisor-streams", "1"]);
    try {
      const url = String((await gw.waitFor(/listening on/)).url);
      const client = createClient(OpenShell, createGrpcTransport({ baseUrl: url }));
      // Requests that never come: each stream stays open until it is cancelled.
      const abort = new AbortController();
      const silent = (): AsyncIterable<SupervisorMessage> => ({
        [Symbol.asyncIterator]: () => ({
          next: () => new Promise<IteratorResult<SupervisorMessage>>((_, reject) => abort.signal.addEventListener("abort", () => reject(abort.signal.reason))),
          return: async () => ({ done: true, value: undefined }),
          throw: async (e: unknown) => {
            throw e;
          },
        }),
      });
      const first = client.connectSupervisor(silent(), { signal: abort.signal })[Symbol.asyncIterator]();
      const firstDone = first.next().catch((e: unknown) => ConnectError.from(e));
      // The second asks once the gateway counts the first as admitted (not after a guessed delay).
      const admitted = async () => (await (await fetch(`${url}/metrics`)).text()).match(/^openshell_gateway_supervisor_streams (\d+)$/m)?.[1];
      await expect.poll(admitted, { timeout: 10_000 }).toBe("1");
      const second = await client
        .connectSupervisor(silent(), { signal: abort.signal })
        [Symbol.asyncIterator]()
        .next()
        .catch((e: unknown) => ConnectError.from(e));
      expect(second).toBeInstanceOf(ConnectError);
      expect((second as ConnectError).code).toBe(Code.ResourceExhausted);
      expect((second as ConnectError).rawMessage).toBe("this gateway already serves 1 supervisor stream, its limit; try again later");
      abort.abort(new Error("test over"));
      await firstDone;
    } finally {
      gw.child.kill("SIGKILL");
      await gw.exit;
    }
  });
});
