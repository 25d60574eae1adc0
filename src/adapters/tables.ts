/**
 * The names of leasehold's tables, all under one configurable prefix, so two apps (or two
 * test runs) can share a database.
 */
import { checkIdentifier } from "./sql.ts"

/** leasehold's tables for one prefix. */
export interface TableNames {
  readonly prefix: string
  /** One row per enqueued job. */
  readonly jobs: string
  /** One row per worker host. */
  readonly hosts: string
  /** The LeaseLock table of exclusive jobs and concurrency keys. */
  readonly jobLocks: string
  /** The LeaseLock table that serialises migrations (one row, `migrate`). */
  readonly migrationLocks: string
  /** Which of leasehold's own migrations have been applied. */
  readonly migrations: string
  /** The PostgreSQL LISTEN/NOTIFY channel that wakes idle workers (at most 63 bytes). */
  readonly channel: string
}

/** The default table prefix. */
export const DEFAULT_PREFIX = "leasehold_"

/** The table names for `prefix` (lowercase letters, digits and `_`). */
export const tableNames = (prefix: string = DEFAULT_PREFIX): TableNames => ({
  prefix,
  jobs: checkIdentifier(`${prefix}jobs`),
  hosts: checkIdentifier(`${prefix}hosts`),
  jobLocks: checkIdentifier(`${prefix}job_locks`),
  migrationLocks: checkIdentifier(`${prefix}migration_locks`),
  migrations: checkIdentifier(`${prefix}migrations`),
  channel: `${prefix}jobs`.slice(0, 63)
})
