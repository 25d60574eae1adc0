/**
 * leasehold: durable background jobs for TypeScript on Effect, stored in your own SQL
 * database, with exclusive jobs and concurrency keys enforced by fenced database leases.
 *
 * - `Job.define`, `Job.enqueue`, `Job.heartbeat`, `Job.JobContext`: job types and their use.
 * - `Worker.processNext`, `Worker.processQueue`, `Worker.tick`, `Worker.layer`: running them.
 * - `Leasehold.layer` / `Leasehold.memoryLayer`: the services, over your `SqlClient` or in memory;
 *   `Leasehold.retryConnect`: a `SqlClient` layer that waits (logging, with backoff) for a
 *   database that is down at start-up.
 * - `LeaseLock`: the fenced lease on its own, for any code.
 */
export * from "./core/index.ts"
export * as LeaseLock from "./adapters/LeaseLock.ts"
export * as JobStore from "./adapters/JobStore.ts"
export * as Job from "./runtime/Job.ts"
export * as Worker from "./runtime/Worker.ts"
export * as Metrics from "./runtime/metrics.ts"
export * as Leasehold from "./runtime/Leasehold.ts"
export * as Migrator from "./runtime/migrate.ts"
export { DEFAULT_PREFIX, type TableNames, tableNames } from "./adapters/tables.ts"
export { MemoryDatabase, makeMemoryDatabase, makeMemoryLeaseLock, memoryDatabaseLayer, memoryLeaseLockLayer } from "./adapters/memory.ts"
