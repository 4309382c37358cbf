// PostgreSQL schema migrations, applied by ../migrations/migrate.ts. Must describe the same
// logical schema as ../sqlite/migrations.ts.
//
// Conventions: times are timestamptz (microsecond precision, so JavaScript Dates round-trip);
// 64-bit counters are bigint (the driver returns them as strings; the store converts to BigInt);
// maps and lists are jsonb (so label filters can use @>); protobuf payloads are bytea.
// workspace and name use the "C" collation so listSandboxes orders bytewise, exactly like SQLite,
// whatever the database's locale. Unqualified names: the connection's search_path picks the schema.

import type { Migration } from "../migrations/migrate.js";

export const postgresMigrations: readonly Migration[] = [
  {
    version: 1,
    name: "initial schema",
    sql: `
      CREATE TABLE sandboxes (
        id text PRIMARY KEY,
        workspace text COLLATE "C" NOT NULL,
        name text COLLATE "C" NOT NULL,
        labels jsonb NOT NULL,
        annotations jsonb NOT NULL,
        spec bytea NOT NULL,
        phase integer NOT NULL,
        resource_version bigint NOT NULL,
        policy_version bigint NOT NULL,
        policy_hash text NOT NULL,
        settings_revision bigint NOT NULL,
        provider_env_revision bigint NOT NULL,
        providers jsonb NOT NULL,
        created_at timestamptz NOT NULL,
        deletion_at timestamptz,
        UNIQUE (workspace, name)
      );

      CREATE TABLE policy_revisions (
        sandbox_id text NOT NULL,
        version bigint NOT NULL,
        policy bytea NOT NULL,
        hash text NOT NULL,
        status integer NOT NULL,
        load_error text NOT NULL,
        created_at timestamptz NOT NULL,
        loaded_at timestamptz,
        provenance jsonb NOT NULL,
        PRIMARY KEY (sandbox_id, version)
      );

      CREATE TABLE settings (
        sandbox_id text NOT NULL,
        key text COLLATE "C" NOT NULL,
        value bytea NOT NULL,
        PRIMARY KEY (sandbox_id, key)
      );

      CREATE TABLE global_settings_revision (
        id integer PRIMARY KEY CHECK (id = 1),
        revision bigint NOT NULL
      );
      INSERT INTO global_settings_revision (id, revision) VALUES (1, 0);

      CREATE TABLE idempotency (
        sandbox_id text NOT NULL,
        key text NOT NULL,
        fingerprint text NOT NULL,
        dimension text NOT NULL CHECK (dimension IN ('policy', 'settings')),
        operation_id text NOT NULL,
        response bytea NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (sandbox_id, key)
      );

      CREATE TABLE operations (
        id text PRIMARY KEY,
        sandbox_id text NOT NULL,
        workspace text NOT NULL,
        dimension text NOT NULL CHECK (dimension IN ('policy', 'settings')),
        component integer NOT NULL,
        desired_revision bigint NOT NULL,
        target bytea,
        state integer NOT NULL,
        outcome integer NOT NULL,
        sanitized_error text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        completed_at timestamptz,
        attempt_count integer NOT NULL,
        next_attempt_at timestamptz NOT NULL,
        row_version bigint NOT NULL
      );
      -- dueOperations / countPending: PENDING rows by next attempt time.
      CREATE INDEX operations_state_next_attempt ON operations (state, next_attempt_at);
      -- operationsOfSandbox / pendingOperations.
      CREATE INDEX operations_sandbox_created ON operations (sandbox_id, created_at);

      CREATE TABLE providers (
        id text PRIMARY KEY,
        workspace text COLLATE "C" NOT NULL,
        name text COLLATE "C" NOT NULL,
        type text NOT NULL,
        resource_version bigint NOT NULL,
        value jsonb NOT NULL,
        created_at timestamptz NOT NULL,
        UNIQUE (workspace, name)
      );
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
        sandbox_id text PRIMARY KEY,
        replica_id text NOT NULL,
        session_id text NOT NULL,
        lease_until timestamptz NOT NULL,
        acquired_at timestamptz NOT NULL
      );
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
        sandbox_id text PRIMARY KEY,
        state integer NOT NULL,
        policy_version integer NOT NULL,
        detail bytea NOT NULL,
        observed_at timestamptz NOT NULL
      );
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
        sandbox_id text NOT NULL,
        event text NOT NULL CHECK (event IN ('created', 'deleted')),
        workspace text COLLATE "C" NOT NULL,
        name text COLLATE "C" NOT NULL,
        principal text NOT NULL,
        at timestamptz NOT NULL,
        PRIMARY KEY (sandbox_id, event)
      );

      CREATE TABLE supervisor_bindings (
        credential text PRIMARY KEY,
        workspace text COLLATE "C" NOT NULL,
        sandbox_name text COLLATE "C" NOT NULL,
        sandbox_id text NOT NULL,
        principal text NOT NULL,
        bound_at timestamptz NOT NULL
      );
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
        workspace text COLLATE "C" NOT NULL,
        id text COLLATE "C" NOT NULL,
        resource_version bigint NOT NULL,
        created_by text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        label_selector text NOT NULL,
        change_hash text NOT NULL,
        change_summary text NOT NULL,
        phase integer NOT NULL,
        summary bytea NOT NULL,
        approvals jsonb NOT NULL,
        lease_holder text,
        lease_principal text,
        lease_until timestamptz,
        require_distinct_approver boolean NOT NULL,
        request bytea NOT NULL,
        state text NOT NULL,
        PRIMARY KEY (workspace, id),
        CHECK ((lease_holder IS NULL) = (lease_until IS NULL) AND (lease_principal IS NULL) = (lease_until IS NULL))
      );
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
