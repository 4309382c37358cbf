// SQLite schema migrations, applied by ../migrations/migrate.ts. Must describe the same logical
// schema as ../postgres/migrations.ts.
//
// Conventions: STRICT tables (SQLite then enforces column types); times are INTEGER milliseconds
// since the epoch; 64-bit counters are INTEGER (signed 64-bit) and are read back as BigInt;
// maps and lists are JSON text; protobuf payloads are BLOBs. There are no foreign keys: global
// rows use sandbox id "" and operations outlive their sandbox.

import type { Migration } from "../migrations/migrate.js";

export const sqliteMigrations: readonly Migration[] = [
  {
    version: 1,
    name: "initial schema",
    sql: `
      CREATE TABLE sandboxes (
        id TEXT PRIMARY KEY,
        workspace TEXT NOT NULL,
        name TEXT NOT NULL,
        labels TEXT NOT NULL,
        annotations TEXT NOT NULL,
        spec BLOB NOT NULL,
        phase INTEGER NOT NULL,
        resource_version INTEGER NOT NULL,
        policy_version INTEGER NOT NULL,
        policy_hash TEXT NOT NULL,
        settings_revision INTEGER NOT NULL,
        provider_env_revision INTEGER NOT NULL,
        providers TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        deletion_at INTEGER,
        UNIQUE (workspace, name)
      ) STRICT;

      CREATE TABLE policy_revisions (
        sandbox_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        policy BLOB NOT NULL,
        hash TEXT NOT NULL,
        status INTEGER NOT NULL,
        load_error TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        loaded_at INTEGER,
        provenance TEXT NOT NULL,
        PRIMARY KEY (sandbox_id, version)
      ) STRICT;

      CREATE TABLE settings (
        sandbox_id TEXT NOT NULL,
        key TEXT NOT NULL,
        value BLOB NOT NULL,
        PRIMARY KEY (sandbox_id, key)
      ) STRICT;

      CREATE TABLE global_settings_revision (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        revision INTEGER NOT NULL
      ) STRICT;
      INSERT INTO global_settings_revision (id, revision) VALUES (1, 0);

      CREATE TABLE idempotency (
        sandbox_id TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        dimension TEXT NOT NULL CHECK (dimension IN ('policy', 'settings')),
        operation_id TEXT NOT NULL,
        response BLOB NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (sandbox_id, key)
      ) STRICT;

      CREATE TABLE operations (
        id TEXT PRIMARY KEY,
        sandbox_id TEXT NOT NULL,
        workspace TEXT NOT NULL,
        dimension TEXT NOT NULL CHECK (dimension IN ('policy', 'settings')),
        component INTEGER NOT NULL,
        desired_revision INTEGER NOT NULL,
        target BLOB,
        state INTEGER NOT NULL,
        outcome INTEGER NOT NULL,
        sanitized_error TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        completed_at INTEGER,
        attempt_count INTEGER NOT NULL,
        next_attempt_at INTEGER NOT NULL,
        row_version INTEGER NOT NULL
      ) STRICT;
      -- dueOperations / countPending: PENDING rows by next attempt time.
      CREATE INDEX operations_state_next_attempt ON operations (state, next_attempt_at);
      -- operationsOfSandbox / pendingOperations.
      CREATE INDEX operations_sandbox_created ON operations (sandbox_id, created_at);

      CREATE TABLE providers (
        id TEXT PRIMARY KEY,
        workspace TEXT NOT NULL,
        name TEXT NOT NULL,
        type TEXT NOT NULL,
        resource_version INTEGER NOT NULL,
        value TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (workspace, name)
      ) STRICT;
    `,
  },
  {
    version: 2,
    name: "index of pending operations by sandbox",
    // Every delivery and every result reads a sandbox's PENDING operations; through the
    // (sandbox_id, created_at) index that read walked the sandbox's whole history.
    sql: `
      CREATE INDEX operations_pending_by_sandbox ON operations (sandbox_id, created_at, id) WHERE state = 1;
    `,
  },
  {
    version: 3,
    name: "supervisor session owners",
    // Several gateway replicas on one database: which replica holds each sandbox's supervisor
    // session, under a lease it renews. No foreign key, as elsewhere: a row may outlive its sandbox.
    sql: `
      CREATE TABLE session_owners (
        sandbox_id TEXT PRIMARY KEY,
        replica_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        lease_until INTEGER NOT NULL,
        acquired_at INTEGER NOT NULL
      ) STRICT;
      -- Lease renewal and the owner's reconciliation look rows up by replica.
      CREATE INDEX session_owners_by_replica ON session_owners (replica_id, lease_until);
    `,
  },
  {
    version: 4,
    name: "what each sandbox enforces",
    // Observed state from each sandbox's latest supervisor result, kept apart from the desired
    // state in sandboxes so that recording it never bumps a sandbox's resource version.
    sql: `
      CREATE TABLE sandbox_enforcement (
        sandbox_id TEXT PRIMARY KEY,
        state INTEGER NOT NULL,
        policy_version INTEGER NOT NULL,
        detail BLOB NOT NULL,
        observed_at INTEGER NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 5,
    name: "sandbox instances: lifecycle records and supervisor bindings",
    // A sandbox re-created under a deleted one's name is a new instance: who created and deleted
    // each instance is kept after it is gone, and each supervisor credential is bound to the
    // instance it serves, keyed by the credential's digest (never the credential).
    sql: `
      CREATE TABLE sandbox_lifecycle (
        sandbox_id TEXT NOT NULL,
        event TEXT NOT NULL CHECK (event IN ('created', 'deleted')),
        workspace TEXT NOT NULL,
        name TEXT NOT NULL,
        principal TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (sandbox_id, event)
      ) STRICT;

      CREATE TABLE supervisor_bindings (
        credential TEXT PRIMARY KEY,
        workspace TEXT NOT NULL,
        sandbox_name TEXT NOT NULL,
        sandbox_id TEXT NOT NULL,
        principal TEXT NOT NULL,
        bound_at INTEGER NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 6,
    name: "shared rollout records",
    // One row per rollout (issue 31), written whole under compare-and-set on resource_version.
    // The change (request) and the driver's state are stored once per rollout; lists never read
    // them. The lease columns are all set or all NULL.
    sql: `
      CREATE TABLE rollouts (
        workspace TEXT NOT NULL,
        id TEXT NOT NULL,
        resource_version INTEGER NOT NULL,
        created_by TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        label_selector TEXT NOT NULL,
        change_hash TEXT NOT NULL,
        change_summary TEXT NOT NULL,
        phase INTEGER NOT NULL,
        summary BLOB NOT NULL,
        approvals TEXT NOT NULL,
        lease_holder TEXT,
        lease_principal TEXT,
        lease_until INTEGER,
        require_distinct_approver INTEGER NOT NULL CHECK (require_distinct_approver IN (0, 1)),
        request BLOB NOT NULL,
        state TEXT NOT NULL,
        PRIMARY KEY (workspace, id),
        CHECK ((lease_holder IS NULL) = (lease_until IS NULL) AND (lease_principal IS NULL) = (lease_until IS NULL))
      ) STRICT;
      -- listRollouts: newest first, with and without a phase filter.
      CREATE INDEX rollouts_newest ON rollouts (created_at DESC, workspace DESC, id DESC);
      CREATE INDEX rollouts_by_phase ON rollouts (phase, created_at DESC, workspace DESC, id DESC);
    `,
  },
  {
    version: 7,
    name: "due operations indexed while pending only",
    // dueOperations and countPending read PENDING rows only, but the (state, next_attempt_at)
    // index held every operation ever made, and an outcome moved its entry from the PENDING part
    // to the terminal one: two index pages written per outcome on SQLite, an index entry added
    // per outcome on PostgreSQL. Partial, it holds the operations in flight and an outcome only
    // removes one (docs/performance.md, run 22). Built before the old one is dropped: on
    // PostgreSQL the DROP locks the table, reads included, until the migration commits.
    sql: `
      CREATE INDEX operations_pending_due ON operations (next_attempt_at) WHERE state = 1;
      DROP INDEX operations_state_next_attempt;
    `,
  },
];
