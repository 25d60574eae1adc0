/**
 * leasehold's own schema, as a numbered list of migrations (docs/behaviour.md §1, §10). Each
 * dialect's DDL lives in its own folder (src/adapters/{postgres,mysql,sqlite}/schema.ts). Every statement is idempotent
 * (`IF NOT EXISTS`): migrations do not run in a transaction (DDL commits one on MySQL), so a
 * step that died half-way must be safe to run again.
 *
 * The runner that applies them under the migration lock is `src/runtime/migrate.ts`; the
 * bookkeeping statements it needs (its own tables, which migrations are applied) are here too,
 * so every piece of SQL leasehold sends lives in src/adapters.
 */
import { type TableNames, tokensTable } from "../../core/tables.ts"
import { mysql } from "../mysql/dialect.ts"
import { mysqlSchema } from "../mysql/schema.ts"
import { postgres } from "../postgres/dialect.ts"
import { postgresSchema } from "../postgres/schema.ts"
import { sqlite } from "../sqlite/dialect.ts"
import { sqliteSchema } from "../sqlite/schema.ts"
import { leaseWindowMs } from "../../core/lease.ts"
import type { AppliedMigration, Migration, SchemaDialect, SchemaStep } from "../../ports/MigrationStore.ts"
import type { Dialect } from "./dialect.ts"
import { leaseStatements } from "./leaseStatements.ts"
import { type DialectSchema, quotedTables } from "./schemaNames.ts"
import { checkIdentifier, RawSql, type Statement, sqlFor } from "./statement.ts"

export { indexName } from "./schemaNames.ts"
export type { AppliedMigration, Migration, SchemaDialect, SchemaStep } from "../../ports/MigrationStore.ts"

/** The dialect objects and their DDL, by name. */
const dialects: { readonly [D in SchemaDialect]: Dialect } = { pg: postgres, mysql, sqlite }
const schemas: { readonly [D in SchemaDialect]: DialectSchema } = {
  pg: postgresSchema,
  mysql: mysqlSchema,
  sqlite: sqliteSchema
}

/** The LeaseLock table's CREATE TABLE, as the LeaseLock itself defines it (one definition). */
const leaseTable = (dialect: SchemaDialect, table: string): Statement => {
  const d = dialects[dialect]
  return leaseStatements(d.syntax, d.lease, table).createTable
}

// ---------------------------------------------------------------------------------------------
// Migration 1: jobs, hosts and the job lock table.
//
// The claim index is (status, priority DESC, run_at), not (status, run_at, priority): the claim
// reads `status = 'pending' AND run_at <= now ORDER BY priority DESC, run_at ASC LIMIT 1`, and
// only this order lets the index deliver rows already sorted. On MySQL that matters for
// correctness under load, not just speed: with a filesort, `FOR UPDATE SKIP LOCKED` locks every
// due row it reads before LIMIT applies, and concurrent claimers then skip them all.

/** Migration 1: the jobs table and its indexes, the hosts table and the job lock table. */
export const createJobTables: Migration = {
  id: 1,
  name: "create jobs, hosts and job locks",
  statements: (dialect, t) => [...schemas[dialect].createJobsAndHosts(t), leaseTable(dialect, t.jobLocks)],
  memoryTables: (t) => [t.jobs, t.hosts, t.jobLocks]
}

// ---------------------------------------------------------------------------------------------
// Migration 2: the stale deadline as data, so SQL compares and never computes a window.
//
// `grace_ms` is the lease window of the job's own timeout, written at enqueue; `stale_at` is when
// a processing row with no further sign of life is stale, written by the claim (now + grace,
// capped by the worker's cap) and by each heartbeat. The windows come from src/core/lease.ts.
// The backfill computes them in TypeScript, one pair of UPDATEs per distinct timeout; a
// processing row without a timeout gets the default timeout's window. Versions before this
// migration may keep running beside it: a row they enqueue has no grace, and a row they claim no
// deadline; core's isStale then judges it from its timeout (src/core/jobs.ts), as before.

/** The backfill of migration 2: grace and deadline for rows written before it. */
const backfillDeadlines = (dialect: SchemaDialect, t: TableNames): SchemaStep => {
  const sql = sqlFor(dialects[dialect].syntax)
  const jobs = quotedTables(dialects[dialect].syntax, t).jobs
  return {
    each:
      sql`SELECT DISTINCT claim_timeout FROM ${jobs} WHERE (grace_ms IS NULL AND claim_timeout IS NOT NULL) OR (status = 'processing' AND stale_at IS NULL)`,
    then: (row) => {
      const timeout = row.claim_timeout === null || row.claim_timeout === undefined ? null : Number(row.claim_timeout)
      const grace = leaseWindowMs(timeout)
      if (timeout === null) {
        return [
          sql`UPDATE ${jobs} SET stale_at = COALESCE(heartbeat_at, updated_at) + ${grace} WHERE claim_timeout IS NULL AND status = 'processing' AND stale_at IS NULL`
        ]
      }
      return [
        sql`UPDATE ${jobs} SET grace_ms = ${grace} WHERE claim_timeout = ${timeout} AND grace_ms IS NULL`,
        sql`UPDATE ${jobs} SET stale_at = COALESCE(heartbeat_at, updated_at) + ${grace} WHERE claim_timeout = ${timeout} AND status = 'processing' AND stale_at IS NULL`
      ]
    }
  }
}

/** Migration 2: `grace_ms` and `stale_at` on the jobs table, backfilled. */
export const addJobDeadlines: Migration = {
  id: 2,
  name: "stale deadline on job rows",
  statements: (dialect, t) => {
    const { addColumn, bigint } = schemas[dialect]
    return [
      addColumn(t.jobs, "grace_ms", `${bigint} NULL`),
      addColumn(t.jobs, "stale_at", `${bigint} NULL`),
      backfillDeadlines(dialect, t)
    ]
  },
  memoryTables: () => []
}

// ---------------------------------------------------------------------------------------------
// Migration 3: indexes that no single-row statement walks through (PostgreSQL, SQLite).
//
// PostgreSQL keeps the index entries of every old row version until VACUUM. Each job passes
// through pending, processing and completed, so before a vacuum the status-first indexes of
// migration 1 hold a dead 'pending' and a dead 'processing' entry per job handled. A statement
// that finds its row through them walks them all: the claim (through the dead 'pending'
// entries) and, worse, the completion of a batch, which the planner sent down the purge index
// `(status, completed_at)` for `status = 'processing'` (estimated at one row) instead of the
// primary key. Each cost grew with the jobs handled since the last vacuum. Partial indexes hold only the rows their predicate admits:
// `ready` (pending rows, in claim order) and `completed_at` (completed rows, for purge). The
// reaper's deadline index holds rows that have one (processing rows only), and a last one the
// rows claimed by versions before migration 2. No index now serves `status = 'processing'`
// alone, so a statement about one job's row finds it by its primary key. SQLite keeps no old
// versions, but the same smaller indexes serve it as well.

/** Migration 3: partial indexes for the claim, purge and reaper (PostgreSQL and SQLite). */
export const leanIndexes: Migration = {
  id: 3,
  name: "partial indexes for claim, purge and reaper",
  statements: (dialect, t) => schemas[dialect].leanIndexes(t),
  memoryTables: () => []
}

// ---------------------------------------------------------------------------------------------
// Migration 4: the job lock table's fencing-token counters.
//
// A lease row is deleted on release, so a name's last token is kept in a table of its own, one
// row per name ever acquired (docs/behaviour.md §2, "Fencing tokens"). The job leases' ensure
// creates it too, so a worker on a database that has not run this migration still works.

/** The token counter table of a LeaseLock table, as the LeaseLock itself defines it. */
const tokensTableOf = (dialect: SchemaDialect, table: string): Statement => {
  const d = dialects[dialect]
  return leaseStatements(d.syntax, d.lease, table).createTokensTable
}

/** Migration 4: the fencing-token counters of the job lock table. */
export const addLeaseTokens: Migration = {
  id: 4,
  name: "fencing-token counters of job locks",
  statements: (dialect, t) => [tokensTableOf(dialect, t.jobLocks)],
  memoryTables: (t) => [tokensTable(t.jobLocks)]
}

// ---------------------------------------------------------------------------------------------
// Migration 5: the dashboard's jobs page, newest first, by keyset (src/adapters/sql/JobInsights.ts).
//
// The page reads `ORDER BY created_at DESC, id DESC` from a cursor `(created_at, id)`; without
// this index each page would sort the whole table (or the rows of its status) to return 50.

/** Migration 5: an index on `(created_at, id)` for browsing jobs newest first. */
export const browseIndex: Migration = {
  id: 5,
  name: "index for browsing jobs newest first",
  statements: (dialect, t) => [schemas[dialect].createdIndex(t)],
  memoryTables: () => []
}

// ---------------------------------------------------------------------------------------------
// Migration 6: how long a job's unique key stays taken.
//
// `unique_until_finished` is 1 when a finished job lets a new enqueue take its key
// (`uniqueUntil: "finished"`, src/core/transitions.ts keyFreed), 0 when the key stays taken until
// the row is purged (as before). NULL, on rows written before it or by older versions, reads as
// 0. No index: it is read only with the row found by its unique key. A SMALLINT, not a text
// column: on a table PostgreSQL analyzed while empty, it estimates rows per page from the
// declared widths, and the claim's plan should not shift with them (test/integration/claim-plan.test.ts).

/** Migration 6: `unique_until_finished` on the jobs table. */
export const addUniqueScope: Migration = {
  id: 6,
  name: "unique key scope on job rows",
  statements: (dialect, t) => [schemas[dialect].addColumn(t.jobs, "unique_until_finished", "SMALLINT NULL")],
  memoryTables: () => []
}

// ---------------------------------------------------------------------------------------------
// Migration 7: each job's attempt history, and an index of dead rows.
//
// `history` holds the job's last attempts as a JSON array (src/core/history.ts), appended to by
// the statement that ends an attempt (the outcome, the batch completion, the reap), so keeping
// it costs no round trip; NULL until the first attempt ends. Retrying, discarding and purging
// dead jobs look them up by status and `failed_at`, which no earlier index serves (migration 3
// left PostgreSQL and SQLite without a status-first index): a partial index of dead rows there,
// (status, failed_at) on MySQL.

/** Migration 7: `history` on the jobs table, and the dead-row index. */
export const addAttemptHistory: Migration = {
  id: 7,
  name: "attempt history and dead-job index",
  statements: (dialect, t) => {
    const { addColumn, json, deadIndex } = schemas[dialect]
    return [addColumn(t.jobs, "history", `${json} NULL`), deadIndex(t)]
  },
  memoryTables: () => []
}

// ---------------------------------------------------------------------------------------------
// Migration 8: the schedules table of recurring jobs (docs/behaviour.md §14).
//
// One row per scheduled job type: its cron as last registered, and the last slot handled. A
// worker enqueues a slot only by moving `last_slot` from the value it read (compare-and-set) in
// the transaction of the enqueue, so however many workers race, one job per slot results.

/** Migration 8: the schedules table (the same columns everywhere, in each dialect's types). */
export const createSchedules: Migration = {
  id: 8,
  name: "schedules of recurring jobs",
  statements: (dialect, t) => {
    const { bigint, tableOptions } = schemas[dialect]
    const sql = sqlFor(dialects[dialect].syntax)
    const type = new RawSql(bigint)
    return [sql`CREATE TABLE IF NOT EXISTS ${quotedTables(dialects[dialect].syntax, t).schedules} (
  name VARCHAR(255) NOT NULL PRIMARY KEY,
  cron VARCHAR(255) NOT NULL,
  time_zone VARCHAR(64) NOT NULL,
  catch_up VARCHAR(8) NOT NULL,
  last_slot ${type} NULL,
  next_slot ${type} NULL,
  created_at ${type} NOT NULL,
  updated_at ${type} NOT NULL
)${new RawSql(tableOptions)}`]
  },
  memoryTables: (t) => [t.schedules]
}

// ---------------------------------------------------------------------------------------------
// Migration 9: the trace context a job carries from its enqueue to its attempts (docs/tracing.md).
//
// `trace_context` holds the W3C traceparent of the span that enqueued the job
// (src/core/traceContext.ts: `00-<32 hex>-<16 hex>-<2 hex>`, 55 characters), written only when a
// tracer was installed; each attempt's span links to it. NULL otherwise, and on rows written
// before it. No index: it is read only with the claimed row.

/** Migration 9: `trace_context` on the jobs table. */
export const addTraceContext: Migration = {
  id: 9,
  name: "trace context on job rows",
  statements: (dialect, t) => [schemas[dialect].addColumn(t.jobs, "trace_context", "VARCHAR(64) NULL")],
  memoryTables: () => []
}

// ---------------------------------------------------------------------------------------------
// Migration 10: the record of lost leases (src/core/lostLeases.ts).
//
// One row per lease a run lost, written by the worker where it finds the loss
// (src/runtime/worker/outcome.ts `reportLeaseLost`), read newest first by the dashboard. Retention
// keeps it small (at most `MAX_LOST_LEASES` rows), so `lost_at` needs no index.

/** Migration 10: the lost-leases table (the same columns everywhere, in each dialect's types). */
export const createLostLeases: Migration = {
  id: 10,
  name: "record of lost leases",
  statements: (dialect, t) => {
    const { bigint, tableOptions } = schemas[dialect]
    const syntax = dialects[dialect].syntax
    const type = new RawSql(bigint)
    return [sqlFor(syntax)`CREATE TABLE IF NOT EXISTS ${new RawSql(syntax.quote(checkIdentifier(t.lostLeases)))} (
  id VARCHAR(36) NOT NULL PRIMARY KEY,
  lease_name VARCHAR(255) NOT NULL,
  job_id VARCHAR(36) NOT NULL,
  job_name VARCHAR(255) NOT NULL,
  attempt INT NOT NULL,
  host VARCHAR(255) NULL,
  fencing_token ${type} NULL,
  holder VARCHAR(255) NULL,
  lost_at ${type} NOT NULL,
  detected VARCHAR(16) NOT NULL
)${new RawSql(tableOptions)}`]
  },
  memoryTables: (t) => [t.lostLeases]
}

// ---------------------------------------------------------------------------------------------
// Migration 11: the lease a job's attempts take, known at enqueue (src/core/lease.ts
// `leaseNameFor`, slot 0 of its key).
//
// With it PostgreSQL's claim takes the lease in the claim's own statement (one round trip per
// exclusive job fewer; src/adapters/postgres/dialect.ts). It is not `lease_name`: that marks a job
// deferred on a busy lease, a waiter a release hands off to. No index: it is read only with the
// claimed row. NULL for jobs without a lease and rows written before it.

/** Migration 11: `claim_lease` on the jobs table. */
export const addClaimLease: Migration = {
  id: 11,
  name: "lease name on job rows",
  statements: (dialect, t) => [schemas[dialect].addColumn(t.jobs, "claim_lease", "VARCHAR(100) NULL")],
  memoryTables: () => []
}

// ---------------------------------------------------------------------------------------------
// Migration 12: limits changed live (src/core/limits.ts): one row per job type, queue or key
// whose limits an operator overrides or that is paused. Workers read the whole table once a poll
// interval; it holds a row per override, so it needs no index beyond its key.

/** Migration 12: the limits table. */
export const createLimits: Migration = {
  id: 12,
  name: "limits changed live",
  statements: (dialect, t) => {
    const { bigint, tableOptions } = schemas[dialect]
    const syntax = dialects[dialect].syntax
    const type = new RawSql(bigint)
    return [sqlFor(syntax)`CREATE TABLE IF NOT EXISTS ${new RawSql(syntax.quote(checkIdentifier(t.limits)))} (
  scope VARCHAR(8) NOT NULL,
  target VARCHAR(255) NOT NULL,
  concurrency INT NULL,
  type_cap INT NULL,
  rate_limit INT NULL,
  rate_period_ms ${type} NULL,
  paused INT NOT NULL,
  paused_by VARCHAR(255) NULL,
  paused_at ${type} NULL,
  updated_at ${type} NOT NULL,
  PRIMARY KEY (scope, target)
)${new RawSql(tableOptions)}`]
  },
  memoryTables: (t) => [t.limits]
}

/** leasehold's migrations, in the order they apply. Append new ones; never edit an applied one. */
export const migrations: ReadonlyArray<Migration> = [
  createJobTables,
  addJobDeadlines,
  leanIndexes,
  addLeaseTokens,
  browseIndex,
  addUniqueScope,
  addAttemptHistory,
  createSchedules,
  addTraceContext,
  createLostLeases,
  addClaimLease,
  createLimits
]

// ---------------------------------------------------------------------------------------------
// Bookkeeping: the runner's own tables, created before it takes the lock.

/** The statements the migration runner needs for its own bookkeeping, for one dialect and prefix. */
export interface BookkeepingStatements {
  /** CREATE TABLE IF NOT EXISTS of the migrations table. */
  readonly createMigrations: Statement
  /** CREATE TABLE IF NOT EXISTS of the migration lock table (the LeaseLock shape). */
  readonly createMigrationLocks: Statement
  /** CREATE TABLE IF NOT EXISTS of the migration lock's token counters (`<table>_tokens`). */
  readonly createMigrationLockTokens: Statement
  /** Asks the catalog whether a table exists (a failing probe would abort a PostgreSQL transaction). */
  readonly tableExists: (table: string) => Statement
  /** The applied migrations, by id. */
  readonly applied: Statement
  /** Records one applied migration (its id is the primary key, so it is recorded once). */
  readonly record: (row: AppliedMigration) => Statement
}

/** The runner's bookkeeping statements for `dialect` and `tables`. */
export const bookkeepingStatements = (dialect: SchemaDialect, tables: TableNames): BookkeepingStatements => {
  const sql = sqlFor(dialects[dialect].syntax)
  const t = quotedTables(dialects[dialect].syntax, tables).migrations
  return {
    createMigrations: schemas[dialect].createMigrations(tables),
    createMigrationLocks: leaseTable(dialect, tables.migrationLocks),
    createMigrationLockTokens: tokensTableOf(dialect, tables.migrationLocks),
    tableExists: (table) => dialects[dialect].lease.tableExists(table),
    applied: sql`SELECT id, name, applied_at FROM ${t} ORDER BY id`,
    record: (row) => sql`INSERT INTO ${t} (id, name, applied_at) VALUES (${row.id}, ${row.name}, ${row.appliedAt})`
  }
}
