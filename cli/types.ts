// The command line's vocabulary, shared by the parser (args.ts, program.ts) and the commands
// (commands/*.ts): each command as parsed, the options every command takes, and the usage error.
// It sits below every other module of cli/ and imports none of them but the leaf selector.ts, so
// that no two modules need each other.

import type { PolicyMergeOperationInput, SettingInput } from "openshell-config";
import type { Selector } from "./selector.js";

export type Protocol = "grpc" | "connect" | "grpc-web";
export const PROTOCOLS: readonly Protocol[] = ["grpc", "connect", "grpc-web"];
/** `table` for people; `json` and `yaml` print one document of the same typed shape. */
export type OutputFormat = "table" | "wide" | "json" | "yaml";
export const OUTPUT_FORMATS: readonly OutputFormat[] = ["table", "wide", "json", "yaml"];
export type Shell = "bash" | "zsh";
export const SHELLS: readonly Shell[] = ["bash", "zsh"];

/** Options every command accepts. */
export interface GlobalOptions {
  /** `--url`: the same as `--gateway-endpoint`. */
  readonly url: string | undefined;
  /** `--gateway-endpoint URL`: connect to this URL directly. */
  readonly gatewayEndpoint: string | undefined;
  /** `-g, --gateway NAME`: a gateway of the openshell CLI's registry. */
  readonly gateway: string | undefined;
  /** `--gateway-insecure`: do not verify the gateway's certificate. */
  readonly gatewayInsecure: boolean;
  readonly token: string | undefined;
  /** `--config FILE`: a config file other than the default one. */
  readonly config: string | undefined;
  readonly protocol: Protocol;
  /** True when `--protocol` was given (so a follow-up command repeats it). */
  readonly protocolGiven: boolean;
  readonly output: OutputFormat;
  /** `--no-headers`: tables without their header row. */
  readonly headers: boolean;
  readonly allowInsecureToken: boolean;
}

/** Waiting for the outcome of an update. `timeoutMs` is `Infinity` for `--timeout 0`. */
export interface WaitFlags {
  readonly wait: boolean;
  readonly timeoutMs: number;
}

export const SETTING_TYPES = ["string", "bool", "int", "bytes-base64"] as const;
/** A setting's type as `--type` names it, and as `-o json` / `-o yaml` print it. */
export type SettingType = (typeof SETTING_TYPES)[number];

/** The default of `--timeout`. */
export const DEFAULT_TIMEOUT_MS = 60_000;

/**
 * A command line that cannot be run: one line saying what is wrong (`message`) and one pointing
 * to the help (`hint`, e.g. `run 'openshell-config policy set --help' for usage`).
 */
export class UsageError extends Error {
  override readonly name = "UsageError";
  constructor(
    message: string,
    readonly hint: string = "run 'openshell-config --help' for usage",
  ) {
    super(message);
  }
  /** The hint, under the name the first version of this class used. */
  get usage(): string {
    return this.hint;
  }
}

interface Scoped {
  readonly sandbox: string;
  readonly workspace: string | undefined;
}

interface UpdateFlags extends Scoped, WaitFlags {
  readonly idempotencyKey: string | undefined;
}

/** `policy rollout`, parsed. */
export interface RolloutCommand {
  readonly name: "policy rollout";
  /** The policy file; absent only with --resume of a saved rollout. */
  readonly file: string | undefined;
  /**
   * The label selector as the SDK takes it (`k=v,k2=v2`), when it is only equalities; absent
   * only with --resume of a saved rollout, or when `sandboxes` holds what a set-based selector
   * (`env in (a,b)`, `!key`) matched, resolved by the CLI.
   */
  readonly selector: string | undefined;
  /** The parsed selector as given (undefined with --resume alone). */
  readonly labelSelector?: Selector | undefined;
  /** The sandboxes a set-based selector matched, resolved by the CLI; the SDK gets these instead of `selector`. */
  readonly sandboxes?: readonly string[];
  readonly workspace: string | undefined;
  readonly concurrency: number | undefined;
  readonly maxFailures: number | undefined;
  /** The bound on each sandbox's wait; undefined: the SDK's default (60 s). */
  readonly timeoutMs: number | undefined;
  /** The rollout id to continue. */
  readonly resume: string | undefined;
  /** `--waves 1,10%,100%`: cumulative sizes (counts or percentages); undefined: one wave. */
  readonly waves?: readonly (number | `${number}%`)[];
  /** The gate every wave is judged by (`--max-failures` per wave with --waves, `--fail-on-degraded`, `--pause`, `--pause-for-approval`). */
  readonly gate?: RolloutGateFlags;
  /** `--rollback-on-failure`: a failed gate returns every changed sandbox to what it had. */
  readonly rollback?: boolean;
  /** `--four-eyes`: the rollout's creator may not approve its waves (the shared record enforces it). */
  readonly fourEyes?: boolean;
}

/** The gate flags of `policy rollout`, as the SDK's `gate` takes them. */
export interface RolloutGateFlags {
  readonly maxFailures?: number;
  readonly failOnDegraded?: boolean;
  /** Milliseconds (`--pause 5m`) or `approval` (`--pause-for-approval`). */
  readonly pause?: number | "approval";
}

/** `policy rollout resume ID`: continue (or approve) a rollout from its saved state. */
export interface RolloutResumeCommand {
  readonly name: "policy rollout resume";
  readonly id: string;
  readonly workspace: string | undefined;
  readonly concurrency: number | undefined;
  readonly maxFailures: number | undefined;
  readonly timeoutMs: number | undefined;
}

/** `policy rollout approve ID`: approve the wave a paused rollout waits for, and drive the rest. */
export interface RolloutApproveCommand extends Omit<RolloutResumeCommand, "name"> {
  readonly name: "policy rollout approve";
}

/** `policy rollout undo ID`: roll back everything the rollout changed. */
export interface RolloutUndoCommand {
  readonly name: "policy rollout undo";
  readonly id: string;
  /** The rollout's workspace at the gateway (default: the client's). */
  readonly workspace?: string | undefined;
  readonly concurrency: number | undefined;
  readonly timeoutMs: number | undefined;
}

/** `policy rollout status ID [-w]`: the shared record (else the saved state) and what the gateway says now. */
export interface RolloutStatusCommand {
  readonly name: "policy rollout status";
  readonly id: string;
  /** The rollout's workspace at the gateway (default: the client's). */
  readonly workspace?: string | undefined;
  readonly watch: boolean;
}

/** `policy rollout list` (rollouts not yet done) and `policy rollout history` (finished ones), from the shared records. */
export interface RolloutListCommand {
  readonly name: "policy rollout list" | "policy rollout history";
  readonly workspace: string | undefined;
  readonly allWorkspaces: boolean;
  /** `-w` (list only): the table, then a line per change. */
  readonly watch: boolean;
  /** history: the newest N (0: all). */
  readonly limit: number;
}

export type Command =
  | ({ readonly name: "policy set"; readonly file: string; readonly dryRun: boolean } & UpdateFlags)
  | ({ readonly name: "policy get" } & Scoped)
  | ({ readonly name: "policy diff"; readonly file: string } & Scoped)
  | ({ readonly name: "policy history"; readonly limit: number } & Scoped)
  | ({ readonly name: "policy merge"; readonly operations: readonly PolicyMergeOperationInput[]; readonly file: string | undefined } & UpdateFlags)
  | RolloutCommand
  | RolloutResumeCommand
  | RolloutUndoCommand
  | RolloutStatusCommand
  | RolloutApproveCommand
  | (RolloutListCommand & { readonly name: "policy rollout list" })
  | (RolloutListCommand & { readonly name: "policy rollout history" })
  | ({ readonly name: "settings set"; readonly key: string; readonly value: SettingInput; readonly type: SettingType } & UpdateFlags)
  | ({ readonly name: "settings delete"; readonly key: string } & UpdateFlags)
  | ({ readonly name: "settings get"; readonly key: string } & Scoped)
  | ({ readonly name: "settings list" } & Scoped)
  | { readonly name: "operation get"; readonly id: string; readonly workspace: string | undefined; readonly watch: boolean }
  | { readonly name: "operation wait"; readonly id: string; readonly workspace: string | undefined; readonly timeoutMs: number }
  | ({ readonly name: "operation list"; readonly limit: number } & Scoped)
  | {
      readonly name: "sandbox list";
      readonly selector: Selector | undefined;
      readonly workspace: string | undefined;
      readonly allWorkspaces: boolean;
      readonly watch: boolean;
    }
  | { readonly name: "completion"; readonly shell: Shell }
  | { readonly name: "gateway list" }
  | { readonly name: "gateway current" }
  /** `--help`, `help <command>`: the help text to print on stdout. */
  | { readonly name: "help"; readonly topic: string | undefined; readonly text: string }
  | { readonly name: "version" };

export type CommandName = Exclude<Command["name"], "help" | "version">;

export interface ParsedCommandLine {
  readonly global: GlobalOptions;
  readonly command: Command;
}
