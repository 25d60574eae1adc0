/**
 * MySQL/MariaDB's DDL for leasehold's schema (migration 1, the migration runner's table, and how later migrations add a column). The
 * shared migration list, src/adapters/sql/schema.ts, puts each dialect's statements in order.
 *
 * MySQL has no CREATE INDEX IF NOT EXISTS (MariaDB has), so the indexes are declared in the
 * CREATE TABLE, which then stays one idempotent statement. utf8mb4_bin: keys compare exactly.
 */
import type { TableNames } from "../../core/tables.ts"
import { addColumnUnless, type DialectSchema, indexName, quotedTables } from "../sql/schemaNames.ts"
import type { SchemaStep } from "../../ports/MigrationStore.ts"
import { type Statement, sqlFor } from "../sql/statement.ts"
import { mysql } from "./dialect.ts"

const syntax = mysql.syntax
const my = sqlFor(syntax)

const createJobsAndHosts = (t: TableNames): ReadonlyArray<Statement> => {
  const q = quotedTables(syntax, t)
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
}

const createMigrations = (t: TableNames): Statement =>
  my`CREATE TABLE IF NOT EXISTS ${quotedTables(syntax, t).migrations} (
  id INT NOT NULL PRIMARY KEY,
  name VARCHAR(255) NOT NULL,
  applied_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

// MySQL has no ADD COLUMN IF NOT EXISTS (MariaDB has): the catalog says whether a column is there.
const addColumn = (table: string, column: string, definition: string): SchemaStep =>
  addColumnUnless(
    syntax,
    my`SELECT 1 FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ${table} AND column_name = ${column}`,
    table,
    column,
    definition
  )

// No CREATE INDEX IF NOT EXISTS on MySQL (MariaDB has): the catalog says whether an index is there.
const indexUnless = (
  t: TableNames,
  suffix: string,
  create: (q: ReturnType<typeof quotedTables>) => Statement
): SchemaStep => ({
  unless:
    my`SELECT 1 FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ${t.jobs} AND index_name = ${
      indexName(t.jobs, suffix)
    }`,
  then: create(quotedTables(syntax, t))
})

/** MySQL/MariaDB's schema statements. */
// MySQL has no partial indexes, and InnoDB's purge removes the index entries of old row
// versions within moments, so migration 3 has nothing to do here.
export const mysqlSchema: DialectSchema = {
  createJobsAndHosts,
  createMigrations,
  addColumn,
  bigint: "BIGINT",
  // MariaDB's JSON is LONGTEXT checked by JSON_VALID; MySQL's its binary JSON type.
  json: "JSON",
  // No partial indexes: (status, failed_at) serves the same lookups.
  deadIndex: (t) => indexUnless(t, "dead", (q) => my`CREATE INDEX ${q.deadIndex} ON ${q.jobs} (status, failed_at)`),
  leanIndexes: () => [],
  createdIndex: (t) =>
    indexUnless(t, "created", (q) => my`CREATE INDEX ${q.createdIndex} ON ${q.jobs} (created_at, id)`),
  tableOptions: " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
}
