// Messages that go out as bytes written once. connect-node serializes every message it sends with
// toBinary, which walks the whole message through reflection: for a configuration push that is the
// policy tree again, after the commit already encoded it (and the size check a third time). Here a
// message is encoded once, with the fast encoder (binary-encoder.ts, byte for byte toBinary's
// output), and handed to connect as a stand-in: a message of the same type whose fields are all
// unset and whose unknown fields hold those bytes, field by field, in their order. toBinary (and
// encodeMessage) write unknown fields as they hold them, after the set fields (none), so the stand-in
// serializes to exactly the bytes it was made from. A stand-in means nothing to JSON: only streams
// with a binary codec get them (see supervisor-session.ts).
//
// A snapshot's policy is not encoded again either: the bytes stored at commit (or read from the
// store) are placed in field 1, which the fast encoder writes first, ahead of the rest of the
// snapshot encoded without it.

import { create, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { SandboxConfigSnapshotSchema, type SandboxConfigSnapshot } from "openshell-config/raw";
import { encodeMessage } from "./binary-encoder.js";

/** Every stand-in made, so that none is encoded again. */
const standInsMade = new WeakSet<object>();

export function isStandIn(message: object): boolean {
  return standInsMade.has(message);
}

/** A message of type `desc` that serializes to exactly `bytes` (an encoding of a `desc` message). */
export function standIn<Desc extends DescMessage>(desc: Desc, bytes: Uint8Array): MessageShape<Desc> {
  const unknown: { no: number; wireType: number; data: Uint8Array }[] = [];
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag();
    unknown.push({ no, wireType, data: reader.skip(wireType, no) });
  }
  const message = create(desc) as MessageShape<Desc> & { $unknown?: unknown };
  message.$unknown = unknown;
  standInsMade.add(message);
  return message;
}

/**
 * The encoding of each snapshot's policy, when known: lives exactly as long as the snapshot (held
 * while its update is unanswered). No stand-in is kept: a push's bytes live until written.
 */
const policyBytesOf = new WeakMap<SandboxConfigSnapshot, Uint8Array>();

/** The snapshot's policy field: its tag, written ahead of the rest (the lowest field number). */
const POLICY_FIELD = SandboxConfigSnapshotSchema.fields.find((f) => f.localName === "policy")!;
const POLICY_TAG = (POLICY_FIELD.number << 3) | 2;
if (POLICY_FIELD.number !== Math.min(...SandboxConfigSnapshotSchema.fields.map((f) => f.number)) || POLICY_TAG >= 0x80) {
  throw new Error("SandboxConfigSnapshot.policy is no longer its first one-byte-tag field: snapshotBytes must change");
}

/**
 * Records that `snap.policy` is the decoding of `policyBytes` (an encoding written by toBinary or
 * encodeMessage), so that its encoding reuses them. The snapshot must not change afterwards.
 */
export function rememberPolicyBytes(snap: SandboxConfigSnapshot, policyBytes: Uint8Array): void {
  if (snap.policy !== undefined) policyBytesOf.set(snap, policyBytes);
}

/** `toBinary(SandboxConfigSnapshotSchema, snap)`, with the policy's remembered bytes when there are some. */
export function snapshotBytes(snap: SandboxConfigSnapshot): Uint8Array {
  const policy = policyBytesOf.get(snap);
  if (policy === undefined) return encodeMessage(SandboxConfigSnapshotSchema, snap);
  const rest = encodeMessage(SandboxConfigSnapshotSchema, { ...snap, policy: undefined });
  let len = policy.length;
  let lenBytes = 1;
  while (len >= 0x80) {
    len >>>= 7;
    lenBytes++;
  }
  const out = new Uint8Array(1 + lenBytes + policy.length + rest.length);
  out[0] = POLICY_TAG;
  let pos = 1;
  for (len = policy.length; len >= 0x80; len >>>= 7) out[pos++] = (len & 0x7f) | 0x80;
  out[pos++] = len;
  out.set(policy, pos);
  out.set(rest, pos + policy.length);
  return out;
}

/** A stand-in of `snap`, to place in the message that carries it (encoded at once, then dropped). */
export function snapshotStandIn(snap: SandboxConfigSnapshot): SandboxConfigSnapshot {
  return standIn(SandboxConfigSnapshotSchema, snapshotBytes(snap));
}
