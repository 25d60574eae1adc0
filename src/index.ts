/**
 * leasehold: durable background jobs for TypeScript on Effect, stored in your own SQL
 * database, with exclusive jobs and concurrency keys enforced by fenced database leases.
 */
export * from "./core/index.ts"
export * as LeaseLock from "./adapters/LeaseLock.ts"
export { MemoryDatabase, makeMemoryDatabase, makeMemoryLeaseLock, memoryDatabaseLayer, memoryLeaseLockLayer } from "./adapters/memory.ts"
