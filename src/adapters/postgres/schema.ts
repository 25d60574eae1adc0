/**
 * PostgreSQL's DDL for leasehold's schema (migration 1, the migration runner's table, and how later migrations add a column). The
 * shared migration list, src/adapters/sql/schema.ts, puts each dialect's statements in order.
 */
import type { TableNames } from "../../core/tables.ts"
import { type DialectSchema, partialDeadIndex, partialIndexSteps, quotedTables } from "../sql/schemaNames.ts"
import { checkIdentifier, RawSql, type Statement, sqlFor } from "../sql/statement.ts"
import { postgres } from "./dialect.ts"

const syntax = postgres.syntax
const pg = sqlFor(syntax)

const createJobsAndHosts = (t: TableNames): ReadonlyArray<Statement> => {
  const q = quotedTables(syntax, t)
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
}

const createMigrations = (t: TableNames): Statement =>
  pg`CREATE TABLE IF NOT EXISTS ${quotedTables(syntax, t).migrations} (
  id INT NOT NULL PRIMARY KEY,
  name VARCHAR(255) NOT NULL,
  applied_at BIGINT NOT NULL
)`

// PostgreSQL has ADD COLUMN IF NOT EXISTS: the step is idempotent by itself.
const addColumn = (table: string, column: string, definition: string): Statement =>
  pg`ALTER TABLE ${new RawSql(syntax.quote(checkIdentifier(table)))} ADD COLUMN IF NOT EXISTS ${new RawSql(
    checkIdentifier(column)
  )} ${new RawSql(definition)}`

/** PostgreSQL's schema statements. */
export const postgresSchema: DialectSchema = {
  createJobsAndHosts,
  createMigrations,
  addColumn,
  bigint: "BIGINT",
  json: "JSONB",
  deadIndex: (t) => partialDeadIndex(syntax, t),
  leanIndexes: (t) => partialIndexSteps(syntax, t),
  createdIndex: (t) => {
    const q = quotedTables(syntax, t)
    return pg`CREATE INDEX IF NOT EXISTS ${q.createdIndex} ON ${q.jobs} (created_at, id)`
  },
  tableOptions: ""
}
