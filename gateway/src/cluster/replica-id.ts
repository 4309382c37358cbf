// A gateway replica's name: in the session-ownership table, in notifications and in logs. Set
// it (--replica-id) to something stable per instance, e.g. a StatefulSet pod name; the default
// is unique per process start.

import { randomBytes } from "node:crypto";
import { hostname } from "node:os";

export const REPLICA_ID_PATTERN = /^[A-Za-z0-9._-]{1,100}$/;

export function defaultReplicaId(): string {
  const host = hostname().replace(/[^A-Za-z0-9._-]/g, "-").slice(0, 60) || "gateway";
  return `${host}-${process.pid}-${randomBytes(3).toString("hex")}`;
}
