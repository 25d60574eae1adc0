/**
 * leasehold: durable background jobs for TypeScript on Effect, in your own SQL database, with
 * exclusive jobs and concurrency keys enforced by fenced database leases.
 *
 * The public API, chosen on purpose (docs/architecture.md): the modules an app uses, the typed
 * errors, and every type that appears in their signatures. Internals (statement builders,
 * dialects, transitions) are not exported; "leasehold/testing" has the testing kit.
 */
export * as Job from "./runtime/Job.ts"
export * as Worker from "./runtime/Worker.ts"
export * as Schedules from "./runtime/Schedules.ts"
export * as Limits from "./runtime/limits.ts"
export * as Leasehold from "./runtime/Leasehold.ts"
export * as Migrator from "./Migrator.ts"
export * as Metrics from "./Metrics.ts"
export * as LeaseLock from "./LeaseLock.ts"
export * as Fences from "./Fences.ts"
export * as JobStore from "./JobStore.ts"
export * from "./core/errors.ts"
export type { BackoffOptions, JobStatus, QueueTally, ReapDecision } from "./core/jobs.ts"
export type { LeaseRow } from "./core/lease.ts"
export type { LimitChange, LimitRow, LimitScope } from "./core/limits.ts"
export type { RateLimit } from "./core/rate.ts"
export type { AttemptOutcome, AttemptRecord } from "./core/history.ts"
export type * from "./core/model.ts"
export { DEFAULT_PREFIX, type TableNames, tableNames } from "./core/tables.ts"
