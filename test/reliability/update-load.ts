// Steady SDK load for the fault tests, with a ledger of what the gateway acknowledged. Workers
// send policy updates to random sandboxes, half committed then awaited by handle, half waited from
// the start; every policy is unique to its idempotency key, so a key committed twice shows up as
// the same content under two versions. Calls that end in an error (the gateway was down longer
// than the client's retries) are kept as unresolved and resumed by key when the checks run.

import { create } from "@bufbuild/protobuf";
import type { Completion, ConfigClient } from "openshell-config";
import { SandboxPolicySchema, type SandboxPolicy } from "openshell-config/raw";

/** The policy every sandbox starts with. */
export function basePolicy(): SandboxPolicy {
  return policyWith([]);
}

/** A policy whose content is unique to `key` (one extra network rule named after it). */
export function policyFor(key: string): SandboxPolicy {
  return policyWith([key]);
}

function policyWith(keys: readonly string[]): SandboxPolicy {
  const rules = [["github", "api.github.com"], ...keys.map((k) => [`r-${k}`, `${k}.example.com`])];
  return create(SandboxPolicySchema, {
    version: 1,
    filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] },
    networkPolicies: Object.fromEntries(rules.map(([name, host]) => [name, { name, endpoints: [{ host, ports: [443] }], binaries: [{ path: "/usr/bin/git" }] }])),
  });
}

/** A commit the gateway acknowledged: it answered with the committed revision and operation. */
export interface Ack {
  readonly key: string;
  readonly sandbox: string;
  readonly operationId: string;
  readonly policyVersion: number;
  readonly policyHash: string;
}

export interface Sent {
  readonly key: string;
  readonly sandbox: string;
  readonly policy: SandboxPolicy;
}

export interface LoadOptions {
  readonly client: ConfigClient;
  readonly sandboxes: readonly string[];
  readonly workers: number;
  /** Prefix of every idempotency key (unique per test). */
  readonly label: string;
  /** Local bound of each wait. */
  readonly waitMs?: number;
}

export class UpdateLoad {
  readonly sent = new Map<string, Sent>();
  readonly acks = new Map<string, Ack>();
  readonly outcomes = new Map<string, Completion>();
  /** Keys whose commit or wait ended in an error on this side. */
  readonly unresolved = new Set<string>();
  /** Errors seen by the workers, by SDK error code. */
  readonly errors = new Map<string, number>();
  /** The first message of each error code, for diagnosis. */
  readonly errorSamples = new Map<string, string>();
  private stopped = false;
  private seq = 0;
  private running: Promise<void>[] = [];

  constructor(private readonly o: LoadOptions) {}

  start(): void {
    this.running = Array.from({ length: this.o.workers }, (_, w) => this.worker(w));
  }

  /** Stops sending; resolves when every worker's current update has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.running);
  }

  /** Acknowledged commits whose outcome no worker has seen yet. */
  ackedNotTerminal(): Ack[] {
    return [...this.acks.values()].filter((a) => !this.outcomes.has(a.key));
  }

  private count(err: unknown): void {
    const code = (err as { code?: unknown }).code;
    const k = typeof code === "string" ? code : (err as Error).name;
    this.errors.set(k, (this.errors.get(k) ?? 0) + 1);
    if (!this.errorSamples.has(k)) this.errorSamples.set(k, (err as Error).message);
  }

  private async worker(w: number): Promise<void> {
    const { client, sandboxes } = this.o;
    const wait = { timeoutMs: this.o.waitMs ?? 60_000 };
    while (!this.stopped) {
      const n = this.seq++;
      const key = `${this.o.label}-${w}-${n}`;
      const sandbox = sandboxes[Math.floor(Math.random() * sandboxes.length)]!;
      const policy = policyFor(key);
      this.sent.set(key, { key, sandbox, policy });
      try {
        if (n % 2 === 0) {
          const r = await client.updatePolicy({ sandbox, policy, idempotencyKey: key });
          this.acks.set(key, { key, sandbox, operationId: r.operation!.operationId, policyVersion: r.policyVersion, policyHash: r.policyHash });
          this.outcomes.set(key, await client.awaitCompletion(r.handle, wait));
        } else {
          const r = await client.updatePolicy({ sandbox, policy, idempotencyKey: key, wait });
          this.acks.set(key, { key, sandbox, operationId: r.operation!.operationId, policyVersion: r.policyVersion, policyHash: r.policyHash });
          this.outcomes.set(key, r.completion);
        }
      } catch (err) {
        this.count(err);
        this.unresolved.add(key);
      }
    }
  }
}
