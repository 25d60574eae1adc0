/**
 * leasehold's own schema migrations as the package exports them (`import { Migrator } from
 * "leasehold"`): the runner under its lock, its options and results (docs/jobs-and-workers.md;
 * every lock rule in src/runtime/migrate.ts). The in-memory runner is leasehold/testing's.
 */
export {
  DEFAULT_LOCK_TIMEOUT,
  DEFAULT_LOCK_TTL,
  DEFAULT_POLL_INTERVAL,
  layer,
  LOCK_NAME,
  make,
  type MigrationLockState,
  type MigrationRunError,
  type MigrationRunResult,
  type MigrationStatus,
  type MigrationStep,
  Migrator,
  type MigratorApi,
  type MigratorOptions,
  type PendingMigration,
  type UnlockResult
} from "./runtime/migrate.ts"
