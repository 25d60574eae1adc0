/**
 * The names of leasehold's tables, all under one configurable prefix, so two apps (or two
 * test runs) can share a database.
 */

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * Table names come from configuration, never from users' data; still, only lowercase
 * letters, digits and underscores are accepted, so quoting can never be escaped and every
 * database (including MySQL with case-folding settings) sees the same name.
 */
export const checkIdentifier = (identifier: string): string => {
  if (!IDENTIFIER.test(identifier)) {
    throw new TypeError(
      `invalid table name ${JSON.stringify(identifier)}: use lowercase letters, digits and _ (at most 63)`
    )
  }
  return identifier
}

/**
 * The fencing-token counter table of a lease table (`<table>_tokens`): one row per lease name
 * ever acquired, holding its last token. It outlives the lease rows (a release deletes those),
 * so a name's tokens keep rising (docs/behaviour.md §2, "Fencing tokens").
 */
export const tokensTable = (leaseTable: string): string => checkIdentifier(`${leaseTable}_tokens`)

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
  /** One row per scheduled job type: its cron and the last slot enqueued (migration 8). */
  readonly schedules: string
  /** One row per lease a run lost, bounded by retention (migration 10; src/core/lostLeases.ts). */
  readonly lostLeases: string
  /** Limits changed live: one row per job type, queue or key overridden (migration 12; src/core/limits.ts). */
  readonly limits: string
  /** The PostgreSQL LISTEN/NOTIFY channel that wakes idle workers (at most 63 bytes). */
  readonly channel: string
}

/** The default table prefix. */
export const DEFAULT_PREFIX = "leasehold_"

/** Longest table prefix: index names (`<prefix>jobs_<suffix>`) must stay within 63 characters. */
export const MAX_PREFIX_LENGTH = 40

/** The table names for `prefix` (lowercase letters, digits and `_`, at most 40 characters). */
export const tableNames = (prefix: string = DEFAULT_PREFIX): TableNames => {
  if (prefix.length > MAX_PREFIX_LENGTH) {
    throw new TypeError(
      `table prefix ${JSON.stringify(prefix)} is ${prefix.length} characters; at most ${MAX_PREFIX_LENGTH}`
    )
  }
  return {
    prefix,
    jobs: checkIdentifier(`${prefix}jobs`),
    hosts: checkIdentifier(`${prefix}hosts`),
    jobLocks: checkIdentifier(`${prefix}job_locks`),
    migrationLocks: checkIdentifier(`${prefix}migration_locks`),
    migrations: checkIdentifier(`${prefix}migrations`),
    schedules: checkIdentifier(`${prefix}schedules`),
    lostLeases: checkIdentifier(`${prefix}lost_leases`),
    limits: checkIdentifier(`${prefix}limits`),
    channel: `${prefix}jobs`.slice(0, 63)
  }
}
