/**
 * The services an app composes: the job store and job leases for a table prefix, and the
 * registry of its job types. Over the app's own `SqlClient` (`layer`) or in memory
 * (`memoryLayer`, for tests and demos).
 */
import { Layer } from "effect"
import * as JobStore from "../adapters/JobStore.ts"
import { memoryDatabaseLayer, memoryJobStoreLayer } from "../adapters/memory.ts"
import { type AnyJobType, jobsLayer } from "./Job.ts"

/** Options shared by the layers. */
export interface LeaseholdOptions<Types extends ReadonlyArray<AnyJobType>> {
  /** Table prefix (default `leasehold_`): lowercase letters, digits and `_`. */
  readonly prefix?: string | undefined
  /** The job types this process can enqueue and run. */
  readonly jobs: Types
}

/** Services over the app's `SqlClient` (PostgreSQL, MySQL/MariaDB or SQLite). */
export const layer = <const Types extends ReadonlyArray<AnyJobType>>(options: LeaseholdOptions<Types>) =>
  // provideMerge: a perform that enqueues other jobs finds the store in its context.
  jobsLayer(...options.jobs).pipe(Layer.provideMerge(JobStore.layer({ prefix: options.prefix })))

/** The same services on a fresh in-memory database (which it also provides). */
export const memoryLayer = <const Types extends ReadonlyArray<AnyJobType>>(options: LeaseholdOptions<Types>) =>
  jobsLayer(...options.jobs).pipe(
    Layer.provideMerge(memoryJobStoreLayer({ prefix: options.prefix })),
    Layer.provideMerge(memoryDatabaseLayer)
  )
