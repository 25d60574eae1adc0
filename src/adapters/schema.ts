/**
 * leasehold's own schema, as a numbered list of migrations (docs/behaviour.md §1, §10).
 *
 * Each migration spells out its DDL for PostgreSQL, MySQL/MariaDB and SQLite side by side, so
 * a reader can compare the three and a DBA can copy them. Every statement is idempotent
 * (`IF NOT EXISTS`): migrations do not run in a transaction (DDL commits one on MySQL), so a
 * step that died half-way must be safe to run again.
 *
 * The runner that applies them under the migration lock is `src/runtime/migrate.ts`; the
 * bookkeeping statements it needs (its own tables, which migrations are applied) are here too,
 * so every piece of SQL leasehold sends lives in src/adapters.
 */
import { createHash } from "node:crypto"
import { mysql } from "./mysql.ts"
import { postgres } from "./postgres.ts"
import { checkIdentifier, claimIndexName, type Dialect, leaseStatements, RawSql, type Statement, sqlFor, type Syntax } from "./sql.ts"
import { sqlite } from "./sqlite.ts"
import type { TableNames } from "./tables.ts"

/** The SQL databases leasehold migrates. */
export type SchemaDialect = Syntax["name"]

/** One of leasehold's schema migrations. */
export interface Migration {
  /** Its number: applied in ascending order, recorded in the migrations table. */
  readonly id: number
  /** A short description, recorded with the id and shown by `status`. */
  readonly name: string
  /** The statements for one database and prefix, run one by one, in order. */
  readonly statements: (dialect: SchemaDialect, tables: TableNames) => ReadonlyArray<Statement>
  /**
   * The tables it creates in the in-memory store, which "creates" a table by adding an empty
   * map under its name (the memory store has no columns or indexes to declare).
   */
  readonly memoryTables: (tables: TableNames) => ReadonlyArray<string>
}

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

/** The dialect objects, by name: their syntax (quoting) and their lease-table DDL. */
const dialects: { readonly [D in SchemaDialect]: Dialect } = { pg: postgres, mysql, sqlite }

/** Identifiers of one prefix, quoted for one dialect, ready to splice into DDL. */
const quoted = (dialect: SchemaDialect, t: TableNames) => {
  const q = (name: string) => new RawSql(dialects[dialect].syntax.quote(checkIdentifier(name)))
  return {
    jobs: q(t.jobs),
    hosts: q(t.hosts),
    migrations: q(t.migrations),
    // The claim index keeps the name the MySQL claim statement forces (`FORCE INDEX`).
    claimIndex: q(claimIndexName(t.jobs)),
    queueIndex: q(indexName(t.jobs, "queue_status")),
    purgeIndex: q(indexName(t.jobs, "status_completed")),
    uniqueKeyIndex: q(indexName(t.jobs, "unique_key")),
    leaseIndex: q(indexName(t.jobs, "lease_status")),
    hostIndex: q(indexName(t.jobs, "claimed_by_status"))
  }
}

const pg = sqlFor(postgres.syntax)
const my = sqlFor(mysql.syntax)
const lite = sqlFor(sqlite.syntax)

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

const createJobsAndHosts: { readonly [D in SchemaDialect]: (t: TableNames) => ReadonlyArray<Statement> } = {
  pg: (t) => {
    const q = quoted("pg", t)
    return [
      pg`CREATE TABLE IF NOT EXISTS ${q.jobs} (
  id VARCHAR(36) NOT NULL PRIMARY KEY,
  name VARCHAR(255) NOT NULL,
  queue VARCHAR(255) NOT NULL DEFAULT 'default',
  payload TEXT NOT NULL,
  priority INT NOT NULL DEFAULT 0,
  status VARCHAR(16) NOT NULL,
  attempts INT NOT NULL DEFAULT 0,
  max_retries INT NOT NULL DEFAULT 3,
  claim_timeout INT NULL,
  claim_token VARCHAR(36) NULL,
  claimed_by VARCHAR(255) NULL,
  unique_key VARCHAR(255) NOT NULL,
  lease_name VARCHAR(100) NULL,
  heartbeat_at BIGINT NULL,
  last_error TEXT NULL,
  run_at BIGINT NOT NULL,
  completed_at BIGINT NULL,
  failed_at BIGINT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
)`,
      pg`CREATE INDEX IF NOT EXISTS ${q.claimIndex} ON ${q.jobs} (status, priority DESC, run_at)`,
      pg`CREATE INDEX IF NOT EXISTS ${q.queueIndex} ON ${q.jobs} (queue, status)`,
      pg`CREATE INDEX IF NOT EXISTS ${q.purgeIndex} ON ${q.jobs} (status, completed_at)`,
      pg`CREATE UNIQUE INDEX IF NOT EXISTS ${q.uniqueKeyIndex} ON ${q.jobs} (unique_key)`,
      pg`CREATE INDEX IF NOT EXISTS ${q.leaseIndex} ON ${q.jobs} (lease_name, status)`,
      pg`CREATE INDEX IF NOT EXISTS ${q.hostIndex} ON ${q.jobs} (claimed_by, status)`,
      pg`CREATE TABLE IF NOT EXISTS ${q.hosts} (
  host VARCHAR(255) NOT NULL PRIMARY KEY,
  last_seen_at BIGINT NOT NULL,
  started_at BIGINT NOT NULL,
  running INT NOT NULL DEFAULT 0,
  max_concurrent INT NOT NULL DEFAULT 0,
  draining INT NOT NULL DEFAULT 0,
  drain_expires_at BIGINT NULL,
  code_version VARCHAR(64) NULL
)`
    ]
  },
  // MySQL has no CREATE INDEX IF NOT EXISTS (MariaDB has), so the indexes are declared in the
  // CREATE TABLE, which then stays one idempotent statement. utf8mb4_bin: keys compare exactly.
  mysql: (t) => {
    const q = quoted("mysql", t)
    return [
      my`CREATE TABLE IF NOT EXISTS ${q.jobs} (
  id VARCHAR(36) NOT NULL PRIMARY KEY,
  name VARCHAR(255) NOT NULL,
  queue VARCHAR(255) NOT NULL DEFAULT 'default',
  payload LONGTEXT NOT NULL,
  priority INT NOT NULL DEFAULT 0,
  status VARCHAR(16) NOT NULL,
  attempts INT NOT NULL DEFAULT 0,
  max_retries INT NOT NULL DEFAULT 3,
  claim_timeout INT NULL,
  claim_token VARCHAR(36) NULL,
  claimed_by VARCHAR(255) NULL,
  unique_key VARCHAR(255) NOT NULL,
  lease_name VARCHAR(100) NULL,
  heartbeat_at BIGINT NULL,
  last_error TEXT NULL,
  run_at BIGINT NOT NULL,
  completed_at BIGINT NULL,
  failed_at BIGINT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  KEY ${q.claimIndex} (status, priority DESC, run_at),
  KEY ${q.queueIndex} (queue, status),
  KEY ${q.purgeIndex} (status, completed_at),
  UNIQUE KEY ${q.uniqueKeyIndex} (unique_key),
  KEY ${q.leaseIndex} (lease_name, status),
  KEY ${q.hostIndex} (claimed_by, status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
      my`CREATE TABLE IF NOT EXISTS ${q.hosts} (
  host VARCHAR(255) NOT NULL PRIMARY KEY,
  last_seen_at BIGINT NOT NULL,
  started_at BIGINT NOT NULL,
  running INT NOT NULL DEFAULT 0,
  max_concurrent INT NOT NULL DEFAULT 0,
  draining INT NOT NULL DEFAULT 0,
  drain_expires_at BIGINT NULL,
  code_version VARCHAR(64) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`
    ]
  },
  // SQLite: INTEGER holds every whole number (epoch ms included).
  sqlite: (t) => {
    const q = quoted("sqlite", t)
    return [
      lite`CREATE TABLE IF NOT EXISTS ${q.jobs} (
  id VARCHAR(36) NOT NULL PRIMARY KEY,
  name VARCHAR(255) NOT NULL,
  queue VARCHAR(255) NOT NULL DEFAULT 'default',
  payload TEXT NOT NULL,
  priority INTEGER NOT NULL DEFAULT 0,
  status VARCHAR(16) NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  max_retries INTEGER NOT NULL DEFAULT 3,
  claim_timeout INTEGER NULL,
  claim_token VARCHAR(36) NULL,
  claimed_by VARCHAR(255) NULL,
  unique_key VARCHAR(255) NOT NULL,
  lease_name VARCHAR(100) NULL,
  heartbeat_at INTEGER NULL,
  last_error TEXT NULL,
  run_at INTEGER NOT NULL,
  completed_at INTEGER NULL,
  failed_at INTEGER NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
)`,
      lite`CREATE INDEX IF NOT EXISTS ${q.claimIndex} ON ${q.jobs} (status, priority DESC, run_at)`,
      lite`CREATE INDEX IF NOT EXISTS ${q.queueIndex} ON ${q.jobs} (queue, status)`,
      lite`CREATE INDEX IF NOT EXISTS ${q.purgeIndex} ON ${q.jobs} (status, completed_at)`,
      lite`CREATE UNIQUE INDEX IF NOT EXISTS ${q.uniqueKeyIndex} ON ${q.jobs} (unique_key)`,
      lite`CREATE INDEX IF NOT EXISTS ${q.leaseIndex} ON ${q.jobs} (lease_name, status)`,
      lite`CREATE INDEX IF NOT EXISTS ${q.hostIndex} ON ${q.jobs} (claimed_by, status)`,
      lite`CREATE TABLE IF NOT EXISTS ${q.hosts} (
  host VARCHAR(255) NOT NULL PRIMARY KEY,
  last_seen_at INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  running INTEGER NOT NULL DEFAULT 0,
  max_concurrent INTEGER NOT NULL DEFAULT 0,
  draining INTEGER NOT NULL DEFAULT 0,
  drain_expires_at INTEGER NULL,
  code_version VARCHAR(64) NULL
)`
    ]
  }
}

/** Migration 1: the jobs table and its indexes, the hosts table and the job lock table. */
export const createJobTables: Migration = {
  id: 1,
  name: "create jobs, hosts and job locks",
  statements: (dialect, t) => [...createJobsAndHosts[dialect](t), leaseTable(dialect, t.jobLocks)],
  memoryTables: (t) => [t.jobs, t.hosts, t.jobLocks]
}

/** leasehold's migrations, in the order they apply. Append new ones; never edit an applied one. */
export const migrations: ReadonlyArray<Migration> = [createJobTables]

// ---------------------------------------------------------------------------------------------
// Bookkeeping: the runner's own tables, created before it takes the lock.

/** A row of the migrations table. */
export interface AppliedMigration {
  readonly id: number
  readonly name: string
  /** Epoch ms, from the runner's Clock. */
  readonly appliedAt: number
}

const createMigrationsTable: { readonly [D in SchemaDialect]: (t: TableNames) => Statement } = {
  pg: (t) =>
    pg`CREATE TABLE IF NOT EXISTS ${quoted("pg", t).migrations} (
  id INT NOT NULL PRIMARY KEY,
  name VARCHAR(255) NOT NULL,
  applied_at BIGINT NOT NULL
)`,
  mysql: (t) =>
    my`CREATE TABLE IF NOT EXISTS ${quoted("mysql", t).migrations} (
  id INT NOT NULL PRIMARY KEY,
  name VARCHAR(255) NOT NULL,
  applied_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
  sqlite: (t) =>
    lite`CREATE TABLE IF NOT EXISTS ${quoted("sqlite", t).migrations} (
  id INTEGER NOT NULL PRIMARY KEY,
  name VARCHAR(255) NOT NULL,
  applied_at INTEGER NOT NULL
)`
}

/** The statements the migration runner needs for its own bookkeeping, for one dialect and prefix. */
export interface BookkeepingStatements {
  /** CREATE TABLE IF NOT EXISTS of the migrations table. */
  readonly createMigrations: Statement
  /** CREATE TABLE IF NOT EXISTS of the migration lock table (the LeaseLock shape). */
  readonly createMigrationLocks: Statement
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
  const t = quoted(dialect, tables).migrations
  return {
    createMigrations: createMigrationsTable[dialect](tables),
    createMigrationLocks: leaseTable(dialect, tables.migrationLocks),
    tableExists: (table) => dialects[dialect].lease.tableExists(table),
    applied: sql`SELECT id, name, applied_at FROM ${t} ORDER BY id`,
    record: (row) => sql`INSERT INTO ${t} (id, name, applied_at) VALUES (${row.id}, ${row.name}, ${row.appliedAt})`
  }
}
