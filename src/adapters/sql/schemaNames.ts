/** The names the schema gives its tables and indexes, quoted for one dialect's DDL. */
import { createHash } from "node:crypto"
import type { TableNames } from "../../core/tables.ts"
import type { SchemaStep } from "../../ports/MigrationStore.ts"
import { checkIdentifier, RawSql, type Statement, sqlFor, type Syntax } from "./statement.ts"

/** The longest identifier every supported database keeps whole (PostgreSQL truncates at 63 bytes). */
const MAX_IDENTIFIER = 63

/**
 * An index name that carries its table's name, so two prefixes in one database never collide
 * (PostgreSQL index names are global to a schema). A name that would not fit is shortened and
 * made unique again with a hash of the table name, rather than silently truncated.
 */
export const indexName = (table: string, suffix: string): string => {
  const whole = `${table}_${suffix}`
  if (whole.length <= MAX_IDENTIFIER) return checkIdentifier(whole)
  const hash = createHash("sha256").update(table, "utf8").digest("hex").slice(0, 8)
  return checkIdentifier(`${table.slice(0, MAX_IDENTIFIER - suffix.length - hash.length - 2)}_${hash}_${suffix}`)
}

/** The name of the claim index of a jobs table: (status, priority DESC, run_at). */
export const claimIndexName = (jobsTable: string) => `${jobsTable}_claim`

/** Identifiers of one prefix, quoted for one dialect, ready to splice into DDL. */
export const quotedTables = (syntax: Syntax, t: TableNames) => {
  const q = (name: string) => new RawSql(syntax.quote(checkIdentifier(name)))
  return {
    jobs: q(t.jobs),
    hosts: q(t.hosts),
    migrations: q(t.migrations),
    schedules: q(t.schedules),
    // The claim index keeps the name the MySQL claim statement forces (`FORCE INDEX`).
    claimIndex: q(claimIndexName(t.jobs)),
    queueIndex: q(indexName(t.jobs, "queue_status")),
    purgeIndex: q(indexName(t.jobs, "status_completed")),
    uniqueKeyIndex: q(indexName(t.jobs, "unique_key")),
    leaseIndex: q(indexName(t.jobs, "lease_status")),
    hostIndex: q(indexName(t.jobs, "claimed_by_status")),
    // Migration 3's partial indexes (./schema.ts).
    readyIndex: q(indexName(t.jobs, "ready")),
    completedIndex: q(indexName(t.jobs, "completed_at")),
    staleIndex: q(indexName(t.jobs, "stale_at")),
    undatedIndex: q(indexName(t.jobs, "undated")),
    // Migration 5's (./schema.ts).
    createdIndex: q(indexName(t.jobs, "created")),
    // Migration 7's index of dead rows (./schema.ts).
    deadIndex: q(indexName(t.jobs, "dead"))
  }
}

/**
 * Migration 3 where the database has partial indexes (PostgreSQL, SQLite): the claim index
 * keeps pending rows only, the purge index completed rows only, and the reaper gets one index
 * for rows with a deadline and one for rows without. Why: src/adapters/sql/schema.ts.
 */
export const partialIndexSteps = (syntax: Syntax, t: TableNames): ReadonlyArray<Statement> => {
  const sql = sqlFor(syntax)
  const q = quotedTables(syntax, t)
  return [
    sql`CREATE INDEX IF NOT EXISTS ${q.readyIndex} ON ${q.jobs} (priority DESC, run_at) WHERE status = 'pending'`,
    sql`DROP INDEX IF EXISTS ${q.claimIndex}`,
    sql`CREATE INDEX IF NOT EXISTS ${q.completedIndex} ON ${q.jobs} (completed_at) WHERE status = 'completed'`,
    sql`DROP INDEX IF EXISTS ${q.purgeIndex}`,
    sql`CREATE INDEX IF NOT EXISTS ${q.staleIndex} ON ${q.jobs} (stale_at) WHERE stale_at IS NOT NULL`,
    sql`CREATE INDEX IF NOT EXISTS ${q.undatedIndex} ON ${q.jobs} (updated_at) WHERE status = 'processing' AND stale_at IS NULL`
  ]
}

/**
 * Migration 7 where the database has partial indexes (PostgreSQL, SQLite): dead rows by when they
 * died, for retrying, discarding and purging them. Why: src/adapters/sql/schema.ts.
 */
export const partialDeadIndex = (syntax: Syntax, t: TableNames): Statement => {
  const q = quotedTables(syntax, t)
  return sqlFor(
    syntax
  )`CREATE INDEX IF NOT EXISTS ${q.deadIndex} ON ${q.jobs} (failed_at) WHERE status IN ('failed', 'interrupted')`
}

/**
 * `ALTER TABLE table ADD COLUMN column definition`, run only when `probe` (a catalog query for
 * that column) returns no row: for databases without `ADD COLUMN IF NOT EXISTS`.
 */
export const addColumnUnless = (
  syntax: Syntax,
  probe: Statement,
  table: string,
  column: string,
  definition: string
): SchemaStep => ({
  unless: probe,
  then: sqlFor(syntax)`ALTER TABLE ${new RawSql(syntax.quote(checkIdentifier(table)))} ADD COLUMN ${new RawSql(
    checkIdentifier(column)
  )} ${new RawSql(definition)}`
})

/** One dialect's DDL: what each dialect folder's schema.ts supplies. */
export interface DialectSchema {
  /** Migration 1's jobs and hosts tables with their indexes (the lease table comes from the LeaseLock). */
  readonly createJobsAndHosts: (t: TableNames) => ReadonlyArray<Statement>
  /** The migration runner's own bookkeeping table. */
  readonly createMigrations: (t: TableNames) => Statement
  /** Adds a column to a table unless it is there already (`definition` in this dialect's types). */
  readonly addColumn: (table: string, column: string, definition: string) => SchemaStep
  /** The column type of an epoch-ms or other 64-bit integer. */
  readonly bigint: string
  /** The column type of a JSON document (migration 7's attempt history). */
  readonly json: string
  /** Migration 7: the index of dead rows by `failed_at`. */
  readonly deadIndex: (t: TableNames) => SchemaStep
  /** Migration 3: indexes no statement on one job's row can walk through (none on MySQL). */
  readonly leanIndexes: (t: TableNames) => ReadonlyArray<SchemaStep>
  /** Migration 5: the jobs table's `(created_at, id)` index, unless it is there already. */
  readonly createdIndex: (t: TableNames) => SchemaStep
  /** What follows a CREATE TABLE's column list (MySQL: the engine and the exact-comparing collation). */
  readonly tableOptions: string
}
