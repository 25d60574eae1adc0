/**
 * leasehold/testing: a small kit for testing your own job types with `@effect/vitest`.
 *
 * - `TestLeasehold.layer({ jobs })`: the worker services on a fresh in-memory store, its tables
 *   created by leasehold's migrations. Fast; it is the model every SQL store is checked against.
 * - `TestLeasehold.sqliteLayer({ jobs })`: the same services on a fresh in-memory SQLite database
 *   (real SQL, no file, no server), migrated.
 * - `drain`, `advance`, `jobs`, `job`: run what is due, move the `TestClock` and run again, and
 *   look at the rows.
 *
 * Nothing here sleeps or reads the wall clock: every time is Effect's `Clock`, so under
 * `it.effect` a test moves time with `advance` and asserts exact timestamps.
 *
 * ```ts
 * it.effect("retries after 4 s", () =>
 *   Effect.gen(function*() {
 *     const { id } = yield* Job.enqueue(SendReceipt, { orderId: 1 })
 *     expect(yield* drain()).toMatchObject([{ _tag: "Failed", retryAt: 4000 }])
 *     expect(yield* advance("4 seconds")).toMatchObject([{ _tag: "Completed" }])
 *   }).pipe(Effect.provide(TestLeasehold.layer({ jobs: [SendReceipt] }))))
 * ```
 */
import type { WorkerConfigError } from "./core/errors.ts"
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { type Duration, Effect, Layer, Option, TestClock } from "effect"
import type { JobStatus } from "./core/jobs.ts"
import { type SqliteClientService, sqliteMemoryLayer } from "./adapters/clients.ts"
import { MemoryDatabase, memoryDatabaseLayer } from "./adapters/memory/database.ts"
import { memoryJobStoreLayer } from "./adapters/memory/JobStore.ts"
import * as JobStoreModule from "./adapters/sql/JobStore.ts"
import type { JobRow } from "./core/model.ts"
import { type JobLeases, JobStore } from "./ports/JobStore.ts"
import type { ScheduleStore } from "./ports/ScheduleStore.ts"
import { type AnyJobType, type JobContext, type Jobs, jobsLayer, type JobType } from "./runtime/Job.ts"
import * as Migrate from "./runtime/migrate.ts"
import { type ProcessOptions, type ProcessResult, processNext, type WorkerServices } from "./runtime/Worker.ts"

/** The host name the helpers use unless told otherwise, so rows and leases read the same in every run. */
export const TEST_HOST = "leasehold-test"

/** Options of the test layers. */
export interface TestLayerOptions<Types extends ReadonlyArray<AnyJobType>> {
  /** The job types the test enqueues and runs. */
  readonly jobs: Types
  /** Table prefix (default `leasehold_`). */
  readonly prefix?: string | undefined
}

/** What the perform functions of `Types` need besides `JobContext` (the layer takes it from its context). */
export type JobRequirements<Types extends ReadonlyArray<AnyJobType>> = Exclude<
  RequirementsOf<Types[number]>,
  JobContext
>
type RequirementsOf<T> = T extends JobType<string, any, any, infer R> ? R : never

/** The services the test layers provide: everything `processNext`, `enqueue` and the helpers need. */
export type TestServices = WorkerServices

// jobsLayer's requirements, stated with this module's alias so the layers' types line up.
const registry = <const Types extends ReadonlyArray<AnyJobType>>(types: Types) =>
  jobsLayer(...types) as Layer.Layer<Jobs, never, JobRequirements<Types>>

const applyMigrations = <E, R>(migrator: Effect.Effect<Migrate.MigratorApi, E, R>) =>
  Layer.effectDiscard(Effect.flatMap(migrator, (m) => m.run)).pipe(Layer.orDie)

/**
 * The worker services (`JobStore`, `JobLeases`, `Jobs`) on a fresh in-memory store whose tables
 * leasehold's migrations created; the `MemoryDatabase` itself is provided too. Provide it per
 * test (`Effect.provide`) for a clean store each time. Job types whose perform needs `JobStore`
 * or `JobLeases` (a job that enqueues another) get them from this layer.
 */
export const layer = <const Types extends ReadonlyArray<AnyJobType>>(
  options: TestLayerOptions<Types>
): Layer.Layer<
  TestServices | MemoryDatabase,
  never,
  Exclude<JobRequirements<Types>, JobStore | JobLeases | ScheduleStore | MemoryDatabase>
> => {
  const store = memoryJobStoreLayer({ prefix: options.prefix }).pipe(
    Layer.provide(
      applyMigrations(Effect.map(MemoryDatabase, (db) => Migrate.makeMemory(db, { prefix: options.prefix })))
    ),
    Layer.provideMerge(memoryDatabaseLayer)
  )
  return Layer.provideMerge(registry(options.jobs), store)
}

/**
 * The worker services on a fresh in-memory SQLite database (`:memory:`, better-sqlite3), migrated;
 * its `SqlClient` is provided too, for tests that use `sql.withTransaction` or read tables (and
 * for job types whose perform needs it).
 */
export const sqliteLayer = <const Types extends ReadonlyArray<AnyJobType>>(
  options: TestLayerOptions<Types>
): Layer.Layer<
  TestServices | SqlClient.SqlClient | SqliteClientService,
  never,
  Exclude<JobRequirements<Types>, JobStore | JobLeases | ScheduleStore | SqlClient.SqlClient | SqliteClientService>
> => {
  const store = JobStoreModule.layer({ prefix: options.prefix }).pipe(
    Layer.provide(applyMigrations(Migrate.make({ prefix: options.prefix }))),
    Layer.provideMerge(sqliteMemoryLayer)
  )
  return Layer.provideMerge(registry(options.jobs), store)
}

/** Options of `drain` and `advance`: those of `processNext`, plus a bound. */
export interface DrainOptions extends ProcessOptions {
  /**
   * Most `processNext` turns before the drain gives up and dies (default 1000), so a job that
   * keeps enqueuing more work fails the test instead of hanging it.
   */
  readonly maxTurns?: number | undefined
}

/**
 * Runs `processNext` until nothing is due and returns every outcome, in order: `Completed`,
 * `Failed` (with `willRetry` and `retryAt`), `Deferred` (with `retryAt` and the lease's holder),
 * `Fenced`. The final `Idle` is not included, so an empty array means nothing was due. A
 * `Capped` or `Draining` outcome ends the drain and is included. Time does not move: a retry or
 * a deferral is due later, so the drain ends; `advance` runs it.
 */
export const drain = (
  options: DrainOptions = {}
): Effect.Effect<ReadonlyArray<ProcessResult>, SqlError | WorkerConfigError, TestServices> =>
  Effect.gen(function*() {
    const maxTurns = options.maxTurns ?? 1000
    const next: ProcessOptions = { ...options, host: options.host ?? TEST_HOST }
    const results: Array<ProcessResult> = []
    for (let turn = 0; turn < maxTurns; turn++) {
      const result = yield* processNext(next)
      if (result._tag === "Idle") return results
      results.push(result)
      if (result._tag === "Capped" || result._tag === "Draining") return results
    }
    return yield* Effect.dieMessage(`drain: jobs were still due after ${maxTurns} turns (a job that enqueues itself?)`)
  })

/**
 * Moves the `TestClock` forward by `duration`, then `drain`s: what became due in that time runs.
 * Needs the `TestClock` (`it.effect`).
 */
export const advance = (
  duration: Duration.DurationInput,
  options: DrainOptions = {}
): Effect.Effect<ReadonlyArray<ProcessResult>, SqlError | WorkerConfigError, TestServices> =>
  Effect.zipRight(TestClock.adjust(duration), drain(options))

/** Which rows `jobs` returns; every field is optional. */
export interface JobsFilter {
  readonly status?: JobStatus | undefined
  readonly queue?: string | undefined
  /** The job type's name. */
  readonly name?: string | undefined
  /** At most this many rows (default 10 000). */
  readonly limit?: number | undefined
}

/**
 * The job rows that match `filter`, newest first (rows created in the same millisecond come in
 * no particular order: find a job by its id, or sort).
 */
export const jobs = (filter: JobsFilter = {}): Effect.Effect<ReadonlyArray<JobRow>, SqlError, JobStore> =>
  Effect.flatMap(JobStore, (store) => store.list({ ...filter, limit: filter.limit ?? 10_000 }))

/** The row of job `id`; dies when there is none (a test asking for a job that was never enqueued). */
export const job = (id: string): Effect.Effect<JobRow, SqlError, JobStore> =>
  Effect.flatMap(JobStore, (store) =>
    Effect.flatMap(
      store.get(id),
      Option.match({
        onNone: () => Effect.dieMessage(`no job with id ${id}`),
        onSome: Effect.succeed
      })
    ))

/**
 * The job store and the job leases, re-exported for tests: `JobLeases.tryAcquire` holds a lease
 * the way another worker would; `JobStore` reads and writes rows directly.
 */
export { JobLeases, JobStore } from "./ports/JobStore.ts"
/**
 * The in-memory backend: its database, and each store over it, for tests that assemble their
 * own services (TestLeasehold.layer assembles them all).
 */
export {
  MemoryDatabase,
  type MemoryDatabaseApi,
  makeMemoryDatabase,
  memoryDatabaseLayer
} from "./adapters/memory/database.ts"
export { makeMemoryFences, memoryFencesLayer } from "./adapters/memory/Fences.ts"
export { makeMemoryJobStore, memoryJobStoreLayer } from "./adapters/memory/JobStore.ts"
export { makeMemoryLeaseLock, memoryLeaseLockLayer } from "./adapters/memory/LeaseLock.ts"
export { makeMemory as makeMemoryMigrator, memoryLayer as memoryMigratorLayer } from "./runtime/migrate.ts"

/** Everything above under one name, for `import { TestLeasehold } from "leasehold/testing"`. */
export const TestLeasehold = { layer, sqliteLayer, drain, advance, jobs, job, TEST_HOST } as const
