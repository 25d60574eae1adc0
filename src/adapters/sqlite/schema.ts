/**
 * SQLite's DDL for leasehold's schema (migration 1, the migration runner's table, and how later migrations add a column). The
 * shared migration list, src/adapters/sql/schema.ts, puts each dialect's statements in order.
 *
 * SQLite: INTEGER holds every whole number (epoch ms included).
 */
import type { TableNames } from "../../core/tables.ts"
import {
  addColumnUnless,
  type DialectSchema,
  partialDeadIndex,
  partialIndexSteps,
  quotedTables
} from "../sql/schemaNames.ts"
import type { SchemaStep } from "../../ports/MigrationStore.ts"
import { type Statement, sqlFor } from "../sql/statement.ts"
import { sqlite } from "./dialect.ts"

const syntax = sqlite.syntax
const lite = sqlFor(syntax)

const createJobsAndHosts = (t: TableNames): ReadonlyArray<Statement> => {
  const q = quotedTables(syntax, t)
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

const createMigrations = (t: TableNames): Statement =>
  lite`CREATE TABLE IF NOT EXISTS ${quotedTables(syntax, t).migrations} (
  id INTEGER NOT NULL PRIMARY KEY,
  name VARCHAR(255) NOT NULL,
  applied_at INTEGER NOT NULL
)`

// SQLite has no ADD COLUMN IF NOT EXISTS: the table's own column list says whether it is there.
const addColumn = (table: string, column: string, definition: string): SchemaStep =>
  addColumnUnless(
    syntax,
    lite`SELECT 1 FROM pragma_table_info(${table}) WHERE name = ${column}`,
    table,
    column,
    definition
  )

/** SQLite's schema statements. */
export const sqliteSchema: DialectSchema = {
  createJobsAndHosts,
  createMigrations,
  addColumn,
  bigint: "INTEGER",
  json: "TEXT",
  deadIndex: (t) => partialDeadIndex(syntax, t),
  leanIndexes: (t) => partialIndexSteps(syntax, t),
  createdIndex: (t) => {
    const q = quotedTables(syntax, t)
    return lite`CREATE INDEX IF NOT EXISTS ${q.createdIndex} ON ${q.jobs} (created_at, id)`
  },
  tableOptions: ""
}
