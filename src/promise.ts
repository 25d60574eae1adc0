/**
 * leasehold/promise: leasehold for apps that do not use Effect. Job types whose `perform`
 * returns a Promise, a client made from a database URL (or an existing node-postgres Pool),
 * `migrate()`, `enqueue()` (also inside a transaction), workers with a `stop()` that drains
 * gracefully, and `close()`. Errors are Error subclasses named after leasehold's tagged errors
 * (`PayloadError`, `UnknownJobTypeError`, `SqlError`, …); docs/promise-api.md shows it whole.
 */
import { SqlClient } from "@effect/sql"
import { Cause, Context, Effect, Exit, Layer, ManagedRuntime, Option, Runtime, Schema, Scope } from "effect"
import { clientLayerForPgPool, clientLayerForUrl } from "./adapters/clients.ts"
import type { JobFilter, JobRow } from "./core/model.ts"
import type { ScheduleRow } from "./core/schedules.ts"
import { type JobLeases, JobStore } from "./ports/JobStore.ts"
import { ScheduleStore } from "./ports/ScheduleStore.ts"
import type * as WakeupsPort from "./ports/Wakeups.ts"
import * as Job from "./runtime/Job.ts"
import * as Leasehold from "./runtime/Leasehold.ts"
import * as Limits from "./runtime/limits.ts"
import * as Migrator from "./runtime/migrate.ts"
import * as Worker from "./runtime/Worker.ts"
import { type LoggerOptions, loggerLayer, loggerProblem, makeLogger } from "./runtime/logging.ts"

export type { LogEntry, LoggerOptions, LogLevelName, PinoLikeLogger } from "./runtime/logging.ts"

/** What a Promise `perform` sees of its own attempt. */
export interface PromiseJobContext {
  readonly jobId: string
  readonly name: string
  readonly queue: string
  /** 1 for the first run. */
  readonly attempt: number
  readonly host: string
  /**
   * The lease this attempt holds (a job with a concurrency key or `exclusive`) with its fencing
   * token, greater than every earlier holder's: hand it to a resource that keeps the highest
   * (docs/fencing.md). Null for a job without a lease.
   */
  readonly lease: { readonly name: string; readonly fencingToken: bigint } | null
  /**
   * Aborted when the attempt is interrupted (its timeout, a lost lease with `onLeaseLost:
   * "interrupt"`, or a worker stopping past its grace period): pass it on to fetch and friends.
   */
  readonly signal: AbortSignal
  /**
   * Proof of life (keeps the row from being reaped, renews the lease); rejects with `Fenced` when
   * the claim was taken back, and with `JobCancelled` when the job was cancelled: stop then.
   */
  readonly heartbeat: () => Promise<void>
}

/** A job type for the Promise API: `perform` returns a Promise (or nothing). */
export interface PromiseJobDefinition<A, I> extends Job.JobOptions<A> {
  readonly name: string
  /**
   * The payload's Schema (from "effect"), which validates and encodes it; without one, any
   * JSON value is accepted as `A`.
   */
  readonly schema?: Schema.Schema<A, I, never> | undefined
  readonly perform: (payload: A, job: PromiseJobContext) => Promise<void> | void
}

/**
 * Defines a job type whose `perform` returns a Promise. A rejected Promise (or a throw) fails
 * the attempt, which is retried under the type's rules. Throws `JobDefinitionError` on a bad
 * option, like `Job.define`.
 */
export const defineJob = <A = unknown, I = A>(def: PromiseJobDefinition<A, I>): Job.JobType<string, A, I, never> =>
  Job.define<string, A, I, never>({
    ...def,
    schema: def.schema ?? (Schema.Unknown as unknown as Schema.Schema<A, I, never>),
    perform: (payload: A) =>
      Effect.gen(function*() {
        const ctx = yield* Job.JobContext
        const runtime = yield* Effect.runtime<never>()
        const lease = Option.getOrNull(yield* ctx.lease)
        yield* Effect.tryPromise({
          try: async (signal) =>
            def.perform(payload, {
              jobId: ctx.jobId,
              name: ctx.name,
              queue: ctx.queue,
              attempt: ctx.attempt,
              host: ctx.host,
              lease: lease === null ? null : { name: lease.name, fencingToken: lease.fencingToken },
              signal,
              heartbeat: () => settle(Runtime.runPromiseExit(runtime)(ctx.heartbeat))
            }),
          catch: (error) => error
        })
      })
  })

/** A job type with no requirements left: every `defineJob` type (and `Job.define` types that need no services). */
export type PromiseJobType = Job.JobType<string, any, any, never>

/** Options of `createLeasehold`: where the database is, and the job types. */
export interface CreateOptions<Types extends ReadonlyArray<PromiseJobType>> {
  /**
   * `postgres://…`, `mysql://…`, `mariadb://…`, or a SQLite file name (`sqlite:` or `file:`
   * prefix allowed). Only that database's driver is loaded, so only it must be installed.
   */
  readonly url?: string | undefined
  /** Instead of `url`: the app's own node-postgres `Pool`, shared and never ended by leasehold. */
  readonly pool?: unknown
  /** The job types this process enqueues and runs. */
  readonly jobs: Types
  /** Table prefix (default `leasehold_`). */
  readonly prefix?: string | undefined
  /**
   * A layer that installs a tracer, such as @effect/opentelemetry's `NodeSdk.layer(…)`: each
   * enqueue and each attempt is then reported as a span (docs/tracing.md). None by default.
   */
  readonly tracing?: Layer.Layer<never, unknown, never> | undefined
  /**
   * How leasehold logs: a minimum level, its own writer's format and stream, or the app's logger
   * (pino-shaped, or a function). Default: every line from info up, logfmt on stdout.
   * docs/logging.md lists the lines.
   */
  readonly logger?: LoggerOptions | undefined
}

/** Options of `startWorker`: the worker's, and a logger of its own for its lines. */
export interface StartWorkerOptions extends Worker.WorkerConfig {
  /** How this worker logs, instead of the client's `logger`. */
  readonly logger?: LoggerOptions | undefined
}

/** A worker started by `startWorker`. */
export interface WorkerHandle {
  readonly host: string
  /** What it did so far. */
  readonly stats: () => Promise<Worker.WorkerStats>
  /**
   * Stops claiming, lets running attempts finish (within the worker's `gracePeriod`, default
   * 30 s), then interrupts what is left and hands it back (pending, attempt given back, leases
   * released).
   */
  readonly stop: () => Promise<void>
}

/** What a transaction callback may do: the app's own SQL and enqueues, committed or rolled back together. */
export interface Transaction {
  /** Runs SQL with the database's own placeholders (`$1` on PostgreSQL, `?` elsewhere). */
  readonly query: (sql: string, params?: ReadonlyArray<unknown>) => Promise<ReadonlyArray<Record<string, unknown>>>
  readonly enqueue: <A>(
    type: Job.JobType<string, A, any, any>,
    payload: A,
    options?: Job.EnqueueOptions
  ) => Promise<Job.EnqueueResult>
  readonly enqueueMany: <A>(
    type: Job.JobType<string, A, any, any>,
    payloads: Iterable<A>,
    options?: Job.EnqueueManyOptions<A>
  ) => Promise<Job.EnqueueManyResult>
}

/** leasehold for one database and one set of job types. */
export interface LeaseholdClient {
  /** Applies leasehold's migrations under the migration lock (safe when several processes race). */
  readonly migrate: () => Promise<Migrator.MigrationRunResult>
  /** Enqueues a job; the payload is checked with the type's schema. Rejects with `PayloadError`, `EnqueueInputError` or `SqlError`. */
  readonly enqueue: <A>(
    type: Job.JobType<string, A, any, any>,
    payload: A,
    options?: Job.EnqueueOptions
  ) => Promise<Job.EnqueueResult>
  /**
   * Enqueues one job per payload in one transaction, one INSERT per 1,000 jobs; every payload is
   * checked first, and one bad payload rejects the whole call with nothing written. A payload
   * whose unique key is taken is reported in `duplicates` (index, key, the holder's id).
   */
  readonly enqueueMany: <A>(
    type: Job.JobType<string, A, any, any>,
    payloads: Iterable<A>,
    options?: Job.EnqueueManyOptions<A>
  ) => Promise<Job.EnqueueManyResult>
  /**
   * Runs `f` in one database transaction: everything it enqueues or writes through `tx` commits
   * with it, or rolls back if `f` rejects (and the rejection is passed on).
   */
  readonly transaction: <T>(f: (tx: Transaction) => Promise<T>) => Promise<T>
  /**
   * Cancels one job (`Job.cancel`): a pending one never runs, a running one stops at its next
   * heartbeat. Rejects with `JobNotFoundError`, or `JobNotCancellableError` for a finished job.
   */
  readonly cancel: (id: string) => Promise<Job.CancelResult>
  /**
   * Cancels every unfinished job of a type, queue or status (`Job.cancelWhere`); resolves with
   * how many. Rejects with `CancelFilterError` for a filter that cannot work.
   */
  readonly cancelWhere: (filter: Job.CancelWhere) => Promise<{ readonly cancelled: number }>
  /**
   * Why a job is not running, or what it is doing, or how it ended (`Job.explain`): a tagged
   * `reason` with its fields and the `message` saying it in one sentence. Rejects with
   * `JobNotFoundError` for an id that names no job.
   */
  readonly explain: (id: string) => Promise<Job.Explanation>
  /**
   * Limits changed live and pauses (`Limits`, docs/flow-control.md): every worker applies a
   * change within a second. `set` and `clear` reject with `LimitInputError` for a bad change.
   */
  readonly limits: {
    readonly set: (settings: Limits.LimitSettings) => Promise<Limits.LimitRow>
    readonly pause: (target: Limits.LimitTarget, by?: string) => Promise<Limits.LimitRow>
    readonly resume: (target: Limits.LimitTarget) => Promise<Limits.LimitRow>
    readonly clear: (target: Limits.LimitTarget) => Promise<boolean>
    readonly list: () => Promise<ReadonlyArray<Limits.LimitRow>>
  }
  /** One job by id, or undefined. */
  readonly getJob: (id: string) => Promise<JobRow | undefined>
  /** Jobs, newest first. */
  readonly listJobs: (filter?: Partial<JobFilter>) => Promise<ReadonlyArray<JobRow>>
  /**
   * Puts every dead job (failed or interrupted) matching `filter` back to pending; how many.
   * Cancelled jobs too when the filter names them (`status: "cancelled"`, or their `ids`).
   * Rejects with `JobFilterError` for a bad filter (nothing changed).
   */
  readonly retryDead: (filter?: Job.DeadJobsFilter) => Promise<number>
  /**
   * Deletes every dead job matching `filter` (cancelled ones as `retryDead` takes them); how
   * many. Rejects with `JobFilterError` for a bad filter.
   */
  readonly discardDead: (filter?: Job.DeadJobsFilter) => Promise<number>
  /** The recurring jobs' schedules a worker registered, with their last and next slot (`Schedules.list`). */
  readonly listSchedules: () => Promise<ReadonlyArray<ScheduleRow>>
  /** Starts a worker in this process (see `Worker.layer` for the options). */
  readonly startWorker: (config?: StartWorkerOptions) => Promise<WorkerHandle>
  /** Stops every worker it started (gracefully), then closes its database connections. */
  readonly close: () => Promise<void>
}

/** What the client's runtime provides. */
type Services =
  | Job.Jobs
  | JobStore
  | JobLeases
  | ScheduleStore
  | SqlClient.SqlClient
  | Migrator.Migrator
  | WakeupsPort.Wakeups

/** The value of a successful Exit, or its failure thrown as it is (leasehold's errors are Errors named by their tag). */
const settle = async <A, E>(exit: Promise<Exit.Exit<A, E>>): Promise<A> => {
  const done = await exit
  if (Exit.isSuccess(done)) return done.value
  const failure = Cause.failureOption(done.cause)
  throw Option.isSome(failure) ? failure.value : Cause.squash(done.cause)
}

// The keys of CreateOptions.
const CREATE_OPTIONS: ReadonlySet<string> = new Set(["url", "pool", "jobs", "prefix", "tracing", "logger"])

/**
 * Creates a client: connects (the driver is loaded on demand), registers the job types, and
 * returns Promise methods. Call `migrate()` once before the first enqueue on a new database,
 * and `close()` when done, or the process keeps its connections open.
 */
export const createLeasehold = async <const Types extends ReadonlyArray<PromiseJobType>>(
  options: CreateOptions<Types>
): Promise<LeaseholdClient> => {
  // From JavaScript a misspelt option (`prefx`) would otherwise be dropped without a word, and
  // the client would use the default tables.
  const unknown = Object.keys(options).filter((k) => !CREATE_OPTIONS.has(k))
  if (unknown.length > 0) {
    throw new TypeError(
      `createLeasehold: unknown option${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")} (known: ${
        [...CREATE_OPTIONS].join(", ")
      })`
    )
  }
  if ((options.url === undefined) === (options.pool === undefined)) {
    throw new TypeError("createLeasehold needs exactly one of url and pool")
  }
  const badLogger = loggerProblem(options.logger)
  if (badLogger !== undefined) throw new TypeError(`createLeasehold: ${badLogger}`)
  // An empty file name would give SQLite a temporary database that vanishes on close.
  if (options.url !== undefined && options.url.trim() === "") {
    throw new TypeError("createLeasehold: url is empty (a database URL or a SQLite file name is needed)")
  }
  const client = options.pool !== undefined ? clientLayerForPgPool(options.pool) : clientLayerForUrl(options.url!)
  // Kept, so that a worker's own logger can take its place (`startWorker`).
  const clientLogger = options.logger === undefined ? undefined : makeLogger(options.logger)
  // The job types need nothing but what the layer provides (PromiseJobType), which the
  // compiler cannot see through the generic `Types`.
  const services = Leasehold.layer({ jobs: options.jobs, prefix: options.prefix }).pipe(
    Layer.provideMerge(client),
    Layer.provideMerge(Migrator.layer({ prefix: options.prefix }).pipe(Layer.provide(client))),
    // Built first, so the tracer it installs is the runtime's (src/runtime/tracing.ts).
    Layer.provideMerge(options.tracing ?? Layer.empty),
    // Before everything, so that every line the runtime's fibers write goes where it says.
    Layer.provideMerge(clientLogger === undefined ? Layer.empty : loggerLayer(clientLogger, options.logger?.level))
  ) as Layer.Layer<Services, unknown>
  const runtime = ManagedRuntime.make(services)
  // Connect now, so a wrong URL or a missing driver rejects here rather than at first use.
  try {
    await settle(runtime.runPromiseExit(Effect.void))
  } catch (error) {
    await runtime.dispose()
    throw error
  }
  const run = <A, E>(effect: Effect.Effect<A, E, Services>) => settle(runtime.runPromiseExit(effect))
  const workers = new Set<WorkerHandle>()
  let closing: Promise<void> | undefined

  const startWorker = async (options: StartWorkerOptions = {}): Promise<WorkerHandle> => {
    if (closing !== undefined) throw new Error("startWorker: this client is closed")
    const { logger, ...config } = options
    const badLogger = loggerProblem(logger)
    if (badLogger !== undefined) throw new TypeError(`startWorker: ${badLogger}`)
    const scope = await run(Scope.make())
    // The worker's fibers are started while this is built: a logger given here is theirs.
    const built = Layer.buildWithScope(Worker.layer(config), scope)
    const own = logger === undefined
      ? built
      : Effect.provide(built, loggerLayer(makeLogger(logger), logger.level, clientLogger))
    const context = await run(own).catch(
      async (error) => {
        await run(Scope.close(scope, Exit.void))
        throw error
      }
    )
    const worker = Context.get(context, Worker.WorkerHandle)
    let stopping: Promise<void> | undefined
    const handle: WorkerHandle = {
      host: worker.host,
      stats: () => run(worker.stats),
      stop: () => {
        stopping ??= run(Scope.close(scope, Exit.void)).finally(() => workers.delete(handle))
        return stopping
      }
    }
    workers.add(handle)
    return handle
  }

  return {
    migrate: () => run(Effect.flatMap(Migrator.Migrator, (m) => m.run)),
    enqueue: (type, payload, enqueueOptions) => run(Job.enqueue(type, payload, enqueueOptions)),
    enqueueMany: (type, payloads, enqueueOptions) => run(Job.enqueueMany(type, payloads, enqueueOptions)),
    transaction: (f) =>
      run(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        let enqueued = false
        const committed = yield* sql.withTransaction(Effect.gen(function*() {
          // Effects run with this runtime see the transaction's connection, so they must not run
          // once the transaction is over: that connection is back in the pool by then.
          const inside = yield* Effect.runtime<JobStore | SqlClient.SqlClient>()
          let open = true
          const within = <A, E>(effect: Effect.Effect<A, E, JobStore | SqlClient.SqlClient>) =>
            open
              ? settle(Runtime.runPromiseExit(inside)(effect))
              : Promise.reject(new Error("this transaction is over: use tx only inside its callback, and await it"))
          return yield* Effect.ensuring(
            Effect.tryPromise({
              try: () =>
                f({
                  query: (text, params = []) =>
                    within(
                      Effect.flatMap(SqlClient.SqlClient, (s) => s.unsafe<Record<string, unknown>>(text, [...params]))
                    ),
                  enqueue: (type, payload, enqueueOptions) =>
                    within(Effect.tap(Job.enqueue(type, payload, enqueueOptions), () => (enqueued = true))),
                  enqueueMany: (type, payloads, enqueueOptions) =>
                    within(Effect.tap(Job.enqueueMany(type, payloads, enqueueOptions), () => (enqueued = true)))
                }),
              catch: (error) => error
            }),
            Effect.sync(() => (open = false))
          )
        }))
        // Committed: wake this process's idle workers for what the callback enqueued
        // (src/adapters/localWakeups.ts; an enqueue inside a transaction cannot ring itself).
        if (enqueued) (yield* JobStore).wakeups.ring()
        return committed
      })),
    cancel: (id) => run(Job.cancel(id)),
    cancelWhere: (filter) => run(Job.cancelWhere(filter)),
    explain: (id) => run(Job.explain(id)),
    limits: {
      set: (settings) => run(Limits.set(settings)),
      pause: (target, by) => run(Limits.pause(target, by)),
      resume: (target) => run(Limits.resume(target)),
      clear: (target) => run(Limits.clear(target)),
      list: () => run(Limits.list)
    },
    getJob: (id) => run(Effect.map(Effect.flatMap(JobStore, (s) => s.get(id)), Option.getOrUndefined)),
    listJobs: (filter = {}) => run(Effect.flatMap(JobStore, (s) => s.list({ limit: 100, ...filter }))),
    retryDead: (filter) => run(Job.retryDead(filter)),
    discardDead: (filter) => run(Job.discardDead(filter)),
    listSchedules: () => run(Effect.flatMap(ScheduleStore, (s) => s.list)),
    startWorker,
    close: () => {
      // Every worker is stopped, then the connections close, even if a stop failed.
      closing ??= Promise.allSettled([...workers].map((w) => w.stop())).then(() => runtime.dispose())
      return closing
    }
  }
}
