// The one transaction of a sandbox-scoped UpdateConfig: idempotency replay, the
// expected_resource_version check, the desired-state change (policy revision or setting), the
// annotation merge, superseding older pending operations, the new operation and the idempotency
// record. All of it commits together or not at all; nothing here waits on anything but the
// database. A change that would leave a configuration larger than a supervisor accepts is
// refused inside the transaction (snapshot-cap.ts), so nothing of it is stored. A gateway without operations (`trackOperations: false`) commits the same change with
// no operation and no idempotency record, as an upstream release before #3273 did.

import { randomUUID } from "node:crypto";
import { create, fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  ConfigComponent,
  ConfigUpdateOperationState as State,
  ConfigApplyOutcome,
  PolicyStatus,
  SandboxPolicySchema,
  SandboxSpecSchema,
  SettingValueSchema,
  UpdateConfigResponseSchema,
  type SandboxPolicy,
  type UpdateConfigRequest,
  type UpdateConfigResponse,
} from "openshell-config/raw";
import type { Dimension, OperationRecord, PolicyRevisionRecord, SandboxRecord, SettingRecord, StoreTx, Store } from "../store/store.js";
import { applyMergeOperations, checkStaticFields, policyHash, validatePolicy } from "../model/policy.js";
import { initialState, SUPERSEDED_ERROR } from "./states.js";
import { currentRevision } from "../model/snapshot.js";
import { revisionBytes } from "../delivery/revisions.js";
import { resolveInTx } from "./transitions.js";
import { FIRST_CHECK_MS } from "./reconciler.js";
import type { DesiredCache } from "../delivery/desired-cache.js";
import { encodeMessage } from "../model/binary-encoder.js";
import { assertWithinSnapshotCap, configurationBytes, DEFAULT_MAX_SNAPSHOT_BYTES, ownConfigurationBytes } from "./snapshot-cap.js";

export interface CommitResult {
  readonly response: UpdateConfigResponse;
  /** The operation of this commit (or of the replayed one); undefined when operations are not tracked. */
  readonly operation: OperationRecord | undefined;
  readonly sandbox: SandboxRecord;
  /** The request replayed an earlier commit with the same idempotency key. */
  readonly replayed: boolean;
  /** A new desired revision was stored (false for replays and unchanged updates). */
  readonly changed: boolean;
  /** Operations this commit created or resolved, to announce once it is durable. */
  readonly touched: OperationRecord[];
  /** The sandbox's PENDING operations once this commit is durable, oldest first (not for replays). */
  readonly pending?: readonly OperationRecord[] | undefined;
  /** The policy revision this commit stored, with the policy it encodes. */
  readonly policy?: { readonly record: PolicyRevisionRecord; readonly decoded: SandboxPolicy } | undefined;
}

export function dimensionOf(req: UpdateConfigRequest): Dimension {
  return req.settingKey !== "" ? "settings" : "policy";
}

function sameMap(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => b[k] === a[k]);
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** Commits `req` for sandbox `name` in `workspace`; `fingerprint` identifies the payload for idempotency. */
export async function commitSandboxUpdate(
  store: Store,
  workspace: string,
  req: UpdateConfigRequest,
  fingerprint: string,
  options: {
    readonly desired?: DesiredCache | undefined;
    /** `canonicalPolicyJson(req.policy)`, when the caller has it. */
    readonly policyJson?: string | undefined;
    /** The id a new operation gets (a caller listening to it before the commit); random otherwise. */
    readonly operationId?: string | undefined;
    /** False: create no operation (the caller has cleared the idempotency key). Default true. */
    readonly trackOperation?: boolean | undefined;
    /** The largest bootstrap a supervisor accepts (default DEFAULT_MAX_SNAPSHOT_BYTES). */
    readonly maxSnapshotBytes?: number | undefined;
  } = {},
): Promise<CommitResult> {
  const { desired, policyJson } = options;
  return store.transaction(async (tx) => {
    const key = req.idempotencyKey;
    let sb = await tx.sandboxByName(workspace, req.sandbox, key !== "" ? key : undefined, true);
    if (!sb) throw new ConnectError(`sandbox "${req.sandbox}" not found`, Code.NotFound);
    if (key !== "") {
      const prior = await tx.idempotency(sb.id, key);
      if (prior) {
        if (prior.fingerprint !== fingerprint) {
          throw new ConnectError("idempotency_key was already used with a different request payload", Code.InvalidArgument);
        }
        const operation = await tx.operation(prior.operationId);
        if (!operation) throw new ConnectError("the operation of this idempotency key is missing", Code.Internal);
        const response = fromBinary(UpdateConfigResponseSchema, prior.response);
        return { response, operation, sandbox: sb, replayed: true, changed: false, touched: [] };
      }
    }
    if (req.expectedResourceVersion !== 0n && req.expectedResourceVersion !== sb.resourceVersion) {
      throw new ConnectError(
        `resource version mismatch: expected ${req.expectedResourceVersion}, sandbox is at ${sb.resourceVersion}`,
        Code.Aborted,
      );
    }

    const dimension = dimensionOf(req);
    const change = dimension === "policy" ? await changePolicy(tx, sb, req, policyJson) : await changeSetting(tx, sb, req);
    const annotations = { ...sb.annotations, ...req.annotations };
    const annotationsChanged = !sameMap(annotations, sb.annotations);
    const previous = sb;
    if (change.changed || annotationsChanged) {
      sb = await tx.updateSandbox(sb.id, { ...change.patch, annotations });
    }
    if (change.changed) await checkSnapshotCap(tx, previous, sb, change, options.maxSnapshotBytes ?? DEFAULT_MAX_SNAPSHOT_BYTES);
    const desiredRevision = dimension === "policy" ? BigInt(sb.policyVersion) : sb.settingsRevision;

    const touched: OperationRecord[] = [];
    // Every dimension's pending operations: what stays pending is handed to the delivery.
    const pending: OperationRecord[] = [];
    for (const op of await tx.pendingOperations(sb.id)) {
      if (change.changed && op.dimension === dimension && op.desiredRevision < desiredRevision) {
        const superseded = await resolveInTx(tx, op, {
          state: State.SUPERSEDED,
          outcome: ConfigApplyOutcome.IGNORED_STALE,
          error: SUPERSEDED_ERROR,
        });
        if (superseded) {
          touched.push(superseded);
          continue;
        }
      }
      pending.push(op);
    }

    const now = new Date();
    const response = create(UpdateConfigResponseSchema, {
      version: sb.policyVersion,
      policyHash: sb.policyHash,
      settingsRevision: sb.settingsRevision,
      deleted: change.deleted,
      annotations: { ...sb.annotations },
    });
    if (options.trackOperation === false) {
      // Its only completion signal is the policy status: the revision this one replaces before
      // any supervisor answered for it never will, so it is SUPERSEDED now rather than PENDING forever.
      const replaced = change.policy && (await tx.policyRevision(sb.id, change.policy.record.version - 1));
      if (replaced && replaced.status === PolicyStatus.PENDING) {
        await tx.setPolicyStatus(sb.id, replaced.version, PolicyStatus.SUPERSEDED, "", undefined);
      }
      return { response, operation: undefined, sandbox: sb, replayed: false, changed: change.changed, touched, pending, policy: change.policy };
    }
    const init = initialState(sb.phase);
    // Associated with its exact snapshot revision right away: the delivery then finds nothing
    // to re-target, which saves a durable write per update. The global versions are read
    // without a lock (globalVersions): a global change committed meanwhile only means the
    // delivery re-targets it.
    const target =
      init.state !== State.PENDING
        ? undefined
        : revisionBytes(desired ? await desired.revision(tx, sb) : await currentRevision(tx, sb, (await tx.globalVersions()).policyVersion));
    const operation: OperationRecord = {
      id: options.operationId ?? randomUUID(),
      sandboxId: sb.id,
      workspace: sb.workspace,
      dimension,
      component: ConfigComponent.SANDBOX_CONFIG,
      desiredRevision,
      target,
      state: init.state,
      outcome: ConfigApplyOutcome.UNSPECIFIED,
      sanitizedError: init.error,
      createdAt: now,
      updatedAt: now,
      completedAt: init.state === State.PENDING ? undefined : now,
      attemptCount: 0,
      nextAttemptAt: new Date(now.getTime() + FIRST_CHECK_MS),
      rowVersion: 1,
    };
    await tx.insertOperation(operation);
    touched.push(operation);
    if (operation.state === State.PENDING) pending.push(operation);

    if (key !== "") {
      await tx.insertIdempotency({
        sandboxId: sb.id,
        key,
        fingerprint,
        dimension,
        operationId: operation.id,
        response: encodeMessage(UpdateConfigResponseSchema, response),
        createdAt: now,
      });
    }
    return { response, operation, sandbox: sb, replayed: false, changed: change.changed, touched, pending, policy: change.policy };
  });
}

/**
 * Refuses (RESOURCE_EXHAUSTED, rolling the transaction back) a change after which `sb`'s
 * bootstrap would be over `maxBytes` and larger than before. A new policy is measured as the
 * sandbox's own configuration, global policy or not; a setting as the sandbox receives it now.
 */
async function checkSnapshotCap(tx: StoreTx, previous: SandboxRecord, sb: SandboxRecord, change: Change, maxBytes: number): Promise<void> {
  if (change.policy) {
    const own = { policy: change.policy.decoded, bytes: change.policy.record.policy.length, hash: change.policy.record.hash };
    await assertWithinSnapshotCap(await ownConfigurationBytes(tx, sb, own), maxBytes, () => ownConfigurationBytes(tx, previous, undefined));
    return;
  }
  const settings = change.settings!;
  await assertWithinSnapshotCap(await configurationBytes(tx, sb, { sandbox: settings.after, global: settings.global }), maxBytes, () =>
    configurationBytes(tx, previous, { sandbox: settings.before, global: settings.global }),
  );
}

/** Decoded create-time policies by sandbox id, with the spec bytes they came from. */
const createTimePolicies = new Map<string, { readonly spec: Uint8Array; readonly policy: SandboxPolicy }>();
const MAX_CREATE_TIME_POLICIES = 1024;

/**
 * The policy `sb` was created with (what static fields are checked against), decoded once per
 * spec: kept by sandbox id and used only while the row's spec bytes are the same.
 */
function createTimePolicy(sb: SandboxRecord): SandboxPolicy {
  const kept = createTimePolicies.get(sb.id);
  if (kept && kept.spec.length === sb.spec.length && Buffer.compare(kept.spec, sb.spec) === 0) return kept.policy;
  const policy = fromBinary(SandboxSpecSchema, sb.spec).policy ?? create(SandboxPolicySchema);
  createTimePolicies.delete(sb.id);
  createTimePolicies.set(sb.id, { spec: sb.spec.slice(), policy });
  if (createTimePolicies.size > MAX_CREATE_TIME_POLICIES) createTimePolicies.delete(createTimePolicies.keys().next().value!);
  return policy;
}

interface Change {
  changed: boolean;
  deleted: boolean;
  patch: { policyVersion?: number; policyHash?: string; settingsRevision?: bigint };
  policy?: { readonly record: PolicyRevisionRecord; readonly decoded: SandboxPolicy };
  /** A setting change: the sandbox's settings before and after it, and the global settings (as read for it). */
  settings?: { readonly before: readonly SettingRecord[]; readonly after: readonly SettingRecord[]; readonly global: readonly SettingRecord[] };
}

async function changePolicy(tx: StoreTx, sb: SandboxRecord, req: UpdateConfigRequest, policyJson: string | undefined): Promise<Change> {
  const latest = await tx.latestPolicyRevision(sb.id);
  // The latest policy is decoded only when merge operations apply to it.
  const next =
    req.policy ?? applyMergeOperations(latest ? fromBinary(SandboxPolicySchema, latest.policy) : create(SandboxPolicySchema), req.mergeOperations);
  validatePolicy(next);
  checkStaticFields(next, createTimePolicy(sb));
  const hash = next === req.policy && policyJson !== undefined ? policyHash(next, policyJson) : policyHash(next);
  // Identical means the same policy: its canonical hash equals the latest revision's. Annotations
  // are the commit's provenance, not policy: they merge into the sandbox's annotations either way,
  // and the revision keeps the provenance of the commit that created it. (They used to count, so
  // re-sending a policy after a rollout's undo, whose revision carries rollback annotations, made
  // an identical new revision instead of an ignored duplicate.)
  if (latest && latest.hash === hash) return { changed: false, deleted: false, patch: {} };
  const version = (latest?.version ?? 0) + 1;
  const record: PolicyRevisionRecord = {
    sandboxId: sb.id,
    version,
    policy: encodeMessage(SandboxPolicySchema, next),
    hash,
    status: PolicyStatus.PENDING,
    loadError: "",
    createdAt: new Date(),
    loadedAt: undefined,
    provenance: { ...req.annotations },
  };
  await tx.insertPolicyRevision(record);
  return { changed: true, deleted: false, patch: { policyVersion: version, policyHash: hash }, policy: { record, decoded: next } };
}

async function changeSetting(tx: StoreTx, sb: SandboxRecord, req: UpdateConfigRequest): Promise<Change> {
  const key = req.settingKey;
  const global = await tx.settings("");
  if (global.some((s) => s.key === key)) {
    throw new ConnectError(`setting '${key}' is managed globally; delete the global setting first`, Code.FailedPrecondition);
  }
  const settingsBefore = await tx.settings(sb.id);
  const current = settingsBefore.find((s) => s.key === key);
  const revision = sb.settingsRevision + 1n;
  if (req.deleteSetting) {
    if (!current) return { changed: false, deleted: false, patch: {} };
    await tx.deleteSetting(sb.id, key);
    const after = settingsBefore.filter((s) => s.key !== key);
    return { changed: true, deleted: true, patch: { settingsRevision: revision }, settings: { before: settingsBefore, after, global } };
  }
  if (!req.settingValue || req.settingValue.value.case === undefined) {
    throw new ConnectError("setting_value is required unless delete_setting is set", Code.InvalidArgument);
  }
  const value = encodeMessage(SettingValueSchema, req.settingValue);
  if (current && bytesEqual(current.value, value)) return { changed: false, deleted: false, patch: {} };
  const record = { sandboxId: sb.id, key, value };
  await tx.putSetting(record);
  const after = [...settingsBefore.filter((s) => s.key !== key), record];
  return { changed: true, deleted: false, patch: { settingsRevision: revision }, settings: { before: settingsBefore, after, global } };
}
