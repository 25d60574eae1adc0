/**
 * leasehold's side of the job scenarios (bench/scenarios.ts): each function runs one scenario in
 * the bench's child process (bench/child.ts), on a database created for it, and returns what the
 * orchestrator (bench/run.ts) reports.
 *
 * Shape (see `./types.ts`, `JobSystemDriver`; the peers in `./graphile.ts` and `./pgboss.ts`
 * implement the same functions):
 *
 *   throughput(url, n, concurrency, hooks): Promise<{ jobs, ms }>
 *     1 and 7. Enqueue `n` no-op jobs up front (outside the timing), call
 *     `hooks.drainStarting()`, start one worker with `concurrency`, and resolve when the last
 *     job is completed in the database: `ms` from worker start to then. Peak RSS of the child
 *     process after `drainStarting` is recorded by the orchestrator (scenario 7).
 *   exclusiveThroughput(url, n, concurrency, hooks): Promise<{ jobs, ms }>
 *     2. The same, each job with a distinct concurrency key (`job-${i}`).
 *   hotKey(url, n, sleepMs, workers): Promise<{ jobs, sleepMs, ms }>
 *     3. `n` jobs on ONE concurrency key, each perform sleeping `sleepMs`; `workers` worker
 *     fibers (or 4 worker layers) drain them; `ms` from the FIRST JOB'S START (perform entered)
 *     to the last job completed, so worker start-up is left out of this short drain.
 *     The report compares `ms` with the ideal n × sleepMs.
 *   rateLimit(url, n, concurrency, limit, periodMs): Promise<RateLimitResult>
 *     3b (leasehold only). `n` no-op jobs on one key with a rate limit of `limit` per
 *     `periodMs`, all due at once, one worker: each perform's start (`Date.now()`) and how
 *     often the worker deferred the jobs on the way.
 *   latency(url, samples): Promise<{ samplesMs }>
 *     4. An idle worker (started first); enqueue single jobs one at a time, wait until each
 *     has started (and finished, plus a short idle gap), and return `samples`
 *     enqueue-to-start times in ms (measure in the same process: `performance.now()` before
 *     the enqueue call, again at the start of `perform`). Warm-up jobs are not returned.
 *   roundTrips(url, n, exclusive): Promise<{ jobs, statements }>
 *     6. Run the worker over `countingLayer` (`../lib/sql.ts`) on top of `sqlLayer(url)`,
 *     enqueue `n` jobs (plain, or each with its own key), `StatementCount.reset()`, drain,
 *     and return the statements counted (claims, completions, lease acquire/release, polls).
 *
 * `url` is `postgres://…`, `mysql://…` or an SQLite file path; the database is fresh and is
 * dropped by the orchestrator afterwards. Use `sqlLayer(url)` from `../lib/sql.ts` for the
 * client, migrate leasehold's tables inside the function, and stop every worker and pool
 * before returning (the child process exits right after).
 */
import { SqlClient } from "@effect/sql"
import { Deferred, Duration, Effect, HashMap, Layer, Logger, LogLevel, Option, Ref, Schema, type Scope } from "effect"
import { appendFileSync } from "node:fs"
import { performance } from "node:perf_hooks"
import { JobStore } from "../../src/JobStore.ts"
import {
  type AnyJobType,
  define,
  enqueue,
  enqueueMany as enqueueBatch,
  JobContext,
  type JobType
} from "../../src/runtime/Job.ts"
import * as Leasehold from "../../src/runtime/Leasehold.ts"
import * as Migrator from "../../src/runtime/migrate.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { countingLayer, sqlLayer, StatementCount, type StatementCountApi } from "../lib/sql.ts"
import { percentile } from "../lib/stats.ts"
import { makeStepCounter, type StepCounter } from "../lib/steps.ts"
import { mark } from "../lib/timeline.ts"
import { CROSS_GAP_MS, CROSS_WARMUP, epochNow } from "../protocol.ts"
import type {
  Background,
  CrossLatencyResult,
  DrainHooks,
  DrainResult,
  HotKeyResult,
  JobSystemDriver,
  LatencyResult,
  RateLimitResult,
  RoundTripsResult,
  StepsResult,
  StartEnqueuer
} from "./types.ts"

/** How long the idle worker's statements are counted before the cross-process enqueues (s). */
const IDLE_WINDOW_S = 5

const Payload = Schema.Struct({
  i: Schema.Number,
  key: Schema.optional(Schema.String),
  sentAt: Schema.optional(Schema.Number)
})

// Job types. Their perform functions call hooks the scenarios set, so one definition serves all.
let onStart: (i: number, sentAt?: number) => void = () => {}
let sleepMs = 0
const Noop = define({ name: "noop", schema: Payload, perform: () => Effect.void })
const Keyed = define({ name: "keyed", schema: Payload, concurrencyKeyFor: (p) => p.key, perform: () => Effect.void })
const Hot = define({
  name: "hot",
  schema: Payload,
  concurrencyKey: "hot",
  perform: ({ i }) =>
    Effect.zipRight(
      Effect.sync(() => onStart(i)),
      Effect.zipRight(Effect.sleep(Duration.millis(sleepMs)), Effect.sync(() => mark("end")))
    )
})
const Probe = define({
  name: "probe",
  schema: Payload,
  perform: ({ i, sentAt }) => Effect.sync(() => onStart(i, sentAt))
})
const types: ReadonlyArray<AnyJobType> = [Noop, Keyed, Hot, Probe]

type Services = Worker.WorkerServices | SqlClient.SqlClient

/**
 * Runs `program` with migrated tables and leasehold's services over the database at `url`, the
 * job types registered being `jobs` (all of the module's by default).
 */
const run = <A>(
  url: string,
  program: Effect.Effect<A, unknown, Services | Scope.Scope>,
  below?: (l: Layer.Layer<SqlClient.SqlClient, unknown>) => Layer.Layer<SqlClient.SqlClient | StatementCount, unknown>,
  jobs: ReadonlyArray<AnyJobType> = types
) => {
  const client = below ? below(sqlLayer(url, 20)) : sqlLayer(url, 20)
  const services = Leasehold.layer({ jobs }).pipe(Layer.provideMerge(client))
  return Effect.runPromise(
    Effect.scoped(Effect.gen(function*() {
      yield* (yield* Migrator.make()).run
      return yield* program
      // Warnings only, as the peers log: each attempt's info line (src/runtime/worker/observe.ts)
      // would be console output in the measured drain.
    })).pipe(Effect.provide(services), Logger.withMinimumLogLevel(LogLevel.Warning)) as Effect.Effect<A, unknown, never>
  )
}

/**
 * Enqueues `n` jobs up front (outside any timing) through leasehold's bulk API, `enqueueMany`:
 * one call, one transaction, one INSERT per 1,000 rows, as the peers add theirs in bulk
 * (graphile-worker's `add_jobs`). 20,000 single `enqueue` calls used to leave the child's heap,
 * and so the drain's starting RSS, 40-60 MiB larger (issue 13).
 */
const enqueueMany = <A, I, R>(type: JobType<string, A, I, R>, n: number, payload: (i: number) => A) =>
  Effect.asVoid(enqueueBatch(type, Array.from({ length: n }, (_, i) => payload(i))))

/**
 * Starts a worker and resolves when `n` attempts completed, by its own outcome hook (no polling
 * queries). With `counter`, its steps from the worker's start to the last completion are counted.
 */
const drainWith = (n: number, config: Worker.WorkerConfig, counter?: StepCounter) =>
  Effect.gen(function*() {
    const done = yield* Deferred.make<number>()
    // A plain count, as graphile-worker's drain counts its completion events.
    let completed = 0
    const start = performance.now()
    counter?.start()
    yield* Worker.make({
      ...config,
      onResult: (r) =>
        r._tag === "Completed" && ++completed === n ? Deferred.succeed(done, performance.now()) : Effect.void
    })
    const end = yield* Deferred.await(done)
    return { start, end, steps: counter?.stop() ?? 0 }
  })

/**
 * The background rows of scenarios 1d and 1e, inserted by one statement each straight into the
 * jobs table (PostgreSQL): `finished` completed jobs and `future` pending jobs due in a day.
 */
const insertBackground = (background: Background | undefined) =>
  Effect.gen(function*() {
    if (background === undefined || background.finished + background.future === 0) return
    const sql = yield* SqlClient.SqlClient
    const jobs = (yield* JobStore).tables.jobs
    const now = Date.now()
    const rows = (n: number, prefix: string, status: string, runAt: number, completedAt: number | null) =>
      n === 0 ? Effect.void : sql.unsafe(
        `INSERT INTO "${jobs}" (id, name, queue, payload, priority, status, attempts, max_retries, unique_key, run_at, completed_at, created_at, updated_at)
         SELECT '${prefix}' || g, 'noop', 'default', '{"i":0}', 0, '${status}', ${status === "completed" ? 1 : 0}, 3,
                '${prefix}' || g, ${runAt}, ${completedAt ?? "NULL"}, ${now - 60_000}, ${now - 60_000}
         FROM generate_series(1, ${n}) AS g`
      )
    yield* sql.onDialectOrElse({
      pg: () => Effect.void,
      orElse: () => Effect.dieMessage("background rows are inserted on PostgreSQL only")
    })
    yield* rows(background.finished, "done-", "completed", now - 60_000, now - 30_000)
    yield* rows(background.future, "later-", "pending", now + 86_400_000, null)
    yield* sql.unsafe(`VACUUM ANALYZE "${jobs}"`)
  })

export const throughput = (url: string, n: number, concurrency: number, hooks: DrainHooks): Promise<DrainResult> =>
  run(
    url,
    Effect.gen(function*() {
      yield* insertBackground(hooks.background)
      yield* enqueueMany(Noop, n, (i) => ({ i }))
      hooks.drainStarting()
      const { start, end } = yield* drainWith(n, { concurrency, pollInterval: "50 millis", host: "bench" })
      return { jobs: n, ms: end - start }
    })
  )

export const exclusiveThroughput = (
  url: string,
  n: number,
  concurrency: number,
  hooks: DrainHooks
): Promise<DrainResult> =>
  run(
    url,
    Effect.gen(function*() {
      yield* enqueueMany(Keyed, n, (i) => ({ i, key: `job-${i}` }))
      hooks.drainStarting()
      const { start, end } = yield* drainWith(n, { concurrency, pollInterval: "50 millis", host: "bench" })
      return { jobs: n, ms: end - start }
    })
  )

// One drain of `n` hot-key jobs (one enqueue per job, in one transaction, as in the published
// runs before the bulk enqueue of the drains: enqueueMany gives all 200 rows one created_at, and
// the drain then took longer (PostgreSQL at load 5: 6.8-7.0 × ideal, 5.0-5.9 once the hand-off
// broke ties by id, against 4.3 with one enqueue per job)). `counter`, when given, is reset
// before the drain.
const hotDrain = <R = never>(n: number, workers: number, counter?: Effect.Effect<StatementCountApi, never, R>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.withTransaction(
      Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) => enqueue(Hot, { i }), { discard: true })
    )
    const count = counter === undefined ? undefined : yield* counter
    count?.reset()
    // The window the time is taken over (from the first job's start) is the one statements are
    // counted over; the worker's start-up statements before it are reported apart.
    let first = Number.POSITIVE_INFINITY
    let atFirst = 0
    onStart = () => {
      mark("start")
      if (first === Number.POSITIVE_INFINITY) atFirst = count?.get() ?? 0
      first = Math.min(first, performance.now())
    }
    const { end } = yield* drainWith(n, { concurrency: workers, pollInterval: "50 millis", host: "bench" })
    const total = count?.get()
    return { ms: end - first, statements: total === undefined ? undefined : total - atFirst, startStatements: atFirst }
  })

// Timed on the plain client: the counting wrapper takes a pooled connection per statement
// (../lib/sql.ts), which graphile-worker's run does not pay (0.3 ms a statement on PostgreSQL,
// measured on the hand-off's path). Statements are counted in a second drain of the same size
// over the wrapper (issue 13: at most 4 per hot-key job).
export const hotKey = async (url: string, n: number, sleep: number, workers: number): Promise<HotKeyResult> => {
  sleepMs = sleep
  const timed = await run(url, hotDrain(n, workers))
  const counted = await run(
    url,
    hotDrain(n, workers, StatementCount) as Effect.Effect<
      { ms: number; statements: number | undefined; startStatements: number },
      unknown,
      Services | Scope.Scope
    >,
    (l) => countingLayer.pipe(Layer.provide(l))
  )
  return {
    jobs: n,
    sleepMs: sleep,
    ms: timed.ms,
    statements: counted.statements,
    startStatements: counted.startStatements
  }
}

/** One outcome or start of the rate limit's drain, for its timeline (BENCH_RATE_DETAIL=1). */
interface RateEvent {
  readonly at: number
  /** A perform's start, or an outcome: a deferral by the rate limit or by the key's lease, or another. */
  readonly kind: "start" | "rate" | "key" | "other" | "slot"
  /** An outcome: whether it ended the job's first claim. */
  readonly first?: boolean
  /** A deferral: how far ahead of its report the job was due again (ms). */
  readonly ahead?: number | undefined
  /** A start of a job the rate limit deferred last: how long after that deferral's retryAt (ms). */
  readonly late?: number | undefined
  /** A rate slot taken: which (from the worker's debug line). */
  readonly slot?: string
  /** A sample of the jobs table: pending jobs due, pending jobs not yet due, jobs processing. */
  readonly table?: { readonly due: number; readonly later: number; readonly processing: number }
}

/**
 * The rate limit's drain second by second, on stderr: outcomes (claims ended), of which first
 * claims and deferrals, perform starts, how many distinct rate slots they took, and how late the
 * starts of deferred jobs came.
 */
const rateDetail = (events: ReadonlyArray<RateEvent>, from: number, which: string): void => {
  const seconds = new Map<number, Array<RateEvent>>()
  for (const e of events) {
    const s = Math.floor((e.at - from) / 1000)
    const list = seconds.get(s) ?? []
    list.push(e)
    seconds.set(s, list)
  }
  const firstClaims = events.filter((e) => e.first === true)
  console.error(
    `${which} drain: last first claim ended ${
      ((Math.max(...firstClaims.map((e) => e.at)) - from) / 1000).toFixed(2)
    } s after the worker's start`
  )
  console.error(
    "  s  outcomes first rate key starts slots  table due/later/processing (max)  late p50/max (ms)  deferred ahead min/max (ms)"
  )
  for (const s of [...seconds.keys()].sort((a, b) => a - b)) {
    const list = seconds.get(s)!
    const count = (f: (e: RateEvent) => boolean) => list.filter(f).length
    const late = list.flatMap((e) => (e.late === undefined ? [] : [e.late]))
    const ahead = list.flatMap((e) => (e.ahead === undefined ? [] : [e.ahead]))
    const tables = list.flatMap((e) => (e.table === undefined ? [] : [e.table]))
    const slots = new Set(list.flatMap((e) => (e.slot === undefined ? [] : [e.slot]))).size
    console.error(
      `${String(s).padStart(3)} ${
        String(count((e) => e.kind !== "start" && e.kind !== "slot" && e.table === undefined)).padStart(8)
      } ${String(count((e) => e.first === true)).padStart(5)} ${String(count((e) => e.kind === "rate")).padStart(4)} ${
        String(count((e) => e.kind === "key")).padStart(3)
      } ${String(count((e) => e.kind === "start")).padStart(6)} ${String(slots).padStart(5)}  ${
        tables.length === 0
          ? "-"
          : `${Math.max(...tables.map((t) => t.due))}/${Math.max(...tables.map((t) => t.later))}/${
            Math.max(...tables.map((t) => t.processing))
          }`
      }  ${late.length === 0 ? "-" : `${percentile(late, 50)}/${Math.max(...late)}`}  ${
        ahead.length === 0 ? "-" : `${Math.min(...ahead)}/${Math.max(...ahead)}`
      }`
    )
  }
}

/**
 * 3b. `n` no-op jobs on one key ("one") with a rate limit of `limit` starts per `periodMs`,
 * enqueued by one enqueueMany (all due at once), drained by one worker with `concurrency`. The
 * worker keeps its default poll interval: the jobs it defers come back by its own alarms
 * (src/runtime/worker/alarms.ts), as in an app, not by a poll the bench made frequent. Each
 * perform's start is `Date.now()`, the clock the rate slots are taken on. Every claim of a job
 * ends in an outcome the worker's hook sees (`Deferred` for a job over the limit), so the hook
 * counts the claims and keeps each job's last `retryAt`. Statements are counted in a second
 * drain over the counting wrapper, as the hot key's are, so the timed drain pays nothing for it.
 */
export const rateLimit = async (
  url: string,
  n: number,
  concurrency: number,
  limit: number,
  periodMs: number
): Promise<RateLimitResult> => {
  let record: (jobId: string, at: number) => void = () => {}
  const Rated = define({
    name: "rated",
    schema: Payload,
    concurrencyKey: "one",
    rateLimit: { limit, period: Duration.millis(periodMs) },
    perform: () => Effect.flatMap(JobContext, (ctx) => Effect.sync(() => record(ctx.jobId, Date.now())))
  })
  const drain = <R = never>(counter?: Effect.Effect<StatementCountApi, never, R>) =>
    Effect.gen(function*() {
      yield* enqueueMany(Rated, n, (i) => ({ i }))
      const count = counter === undefined ? undefined : yield* counter
      const startsMs: Array<number> = []
      const startOf = new Map<string, number>()
      // Each deferred job's last deferral: when it was due again, and whether the rate limit (not
      // the key's lease) deferred it.
      const lastDeferral = new Map<string, { readonly retryAt: number; readonly rate: boolean }>()
      const deferralsOf = new Map<string, number>()
      let results = 0
      let rateDeferrals = 0
      let keyDeferrals = 0
      let completed = 0
      // With BENCH_RATE_DETAIL=1, every outcome and start, for a timeline on stderr (`rateDetail`).
      const events: Array<RateEvent> | undefined = process.env.BENCH_RATE_DETAIL === "1" ? [] : undefined
      const claimedBefore = new Set<string>()
      const logFile = process.env.BENCH_RATE_LOG
      // A job the rate limit deferred again: how late it came back, and how far its new retryAt is past its old.
      const redeferrals: Array<{ readonly came: number; readonly again: number }> = []
      record = (id, at) => {
        startsMs.push(at)
        startOf.set(id, at)
        const last = lastDeferral.get(id)
        events?.push({ at, kind: "start", late: last?.rate === true ? at - last.retryAt : undefined })
      }
      const done = yield* Deferred.make<number>()
      count?.reset()
      const workerStartMs = Date.now()
      const start = performance.now()
      const worker = Worker.make({
        concurrency,
        host: "bench",
        onResult: (r) =>
          Effect.suspend(() => {
            if (r._tag === "Idle" || r._tag === "Capped" || r._tag === "Draining") return Effect.void
            results++
            if (events !== undefined && "job" in r) {
              const first = !claimedBefore.has(r.job.id)
              claimedBefore.add(r.job.id)
              const at = Date.now()
              events.push({
                at,
                kind: r._tag === "Deferred" ? (r.leaseName.startsWith("rate:") ? "rate" : "key") : "other",
                first,
                ahead: r._tag === "Deferred" ? r.retryAt - at : undefined
              })
            }
            if (r._tag === "Deferred") {
              const rate = r.leaseName.startsWith("rate:")
              const before = lastDeferral.get(r.job.id)
              if (events !== undefined && rate && before?.rate === true) {
                redeferrals.push({ came: Date.now() - before.retryAt, again: r.retryAt - before.retryAt })
              }
              if (rate) rateDeferrals++
              else keyDeferrals++
              lastDeferral.set(r.job.id, { retryAt: r.retryAt, rate })
              deferralsOf.set(r.job.id, (deferralsOf.get(r.job.id) ?? 0) + 1)
            }
            return r._tag === "Completed" && ++completed === n ? Deferred.succeed(done, performance.now()) : Effect.void
          })
      })
      // In a detailed run, the worker's debug line for each rate slot taken says which slot.
      yield* events === undefined ? worker : worker.pipe(
        Logger.withMinimumLogLevel(LogLevel.Debug),
        Effect.provide(Logger.replace(
          Logger.defaultLogger,
          Logger.make(({ annotations, logLevel, message }) => {
            const text = String(Array.isArray(message) ? message[0] : message)
            const taken = /^rate slot (.+) taken$/.exec(text)
            if (taken !== null) events.push({ at: Date.now(), kind: "slot", slot: taken[1]! })
            // BENCH_RATE_LOG=<file>: every line the worker logs, with its epoch ms and its job (the
            // same clock as BENCH_SQL_LOG_TIMES's lines, bench/lib/sql.ts).
            if (logFile !== undefined) {
              const job = HashMap.get(annotations, "jobId").pipe(Option.getOrElse(() => "-"))
              appendFileSync(logFile, `${Date.now()} ${logLevel.label} ${String(job)} ${text}\n`)
            }
          })
        ))
      )
      // In a detailed run, the jobs table is sampled every 250 ms: whether jobs wait due and unclaimed.
      if (events !== undefined) {
        const sql = yield* SqlClient.SqlClient
        const jobs = (yield* JobStore).tables.jobs
        yield* Effect.forkScoped(Effect.forever(Effect.zipRight(
          Effect.flatMap(
            Effect.suspend(() =>
              sql.unsafe<{ due: number | string; later: number | string; processing: number | string }>(
                `SELECT COALESCE(SUM(CASE WHEN status = 'pending' AND run_at <= ${Date.now()} THEN 1 ELSE 0 END), 0) AS due,
                        COALESCE(SUM(CASE WHEN status = 'pending' AND run_at > ${Date.now()} THEN 1 ELSE 0 END), 0) AS later,
                        COALESCE(SUM(CASE WHEN status = 'processing' THEN 1 ELSE 0 END), 0) AS processing
                 FROM ${sql.onDialectOrElse({ mysql: () => `\`${jobs}\``, orElse: () => `"${jobs}"` })}`
              )
            ),
            ([row]) =>
              Effect.sync(() =>
                events.push({
                  at: Date.now(),
                  kind: "other",
                  table: { due: Number(row!.due), later: Number(row!.later), processing: Number(row!.processing) }
                })
              )
          ),
          Effect.sleep("250 millis")
        )))
      }
      const end = yield* Deferred.await(done)
      const statements = count?.get()
      if (events !== undefined) {
        rateDetail(events, workerStartMs, counter === undefined ? "timed" : "counted")
        const perJob = new Map<number, number>()
        for (const id of startOf.keys()) {
          const k = deferralsOf.get(id) ?? 0
          perJob.set(k, (perJob.get(k) ?? 0) + 1)
        }
        console.error(
          `  jobs by deferrals: ${
            [...perJob].sort(([a], [b]) => a - b).map(([k, jobs]) => `${k}: ${jobs}`).join(", ")
          }; rate deferrals of a job the rate limit had deferred before: ${redeferrals.length}, came back p50 ${
            percentile(redeferrals.map((r) => r.came), 50)
          } ms after its retryAt and deferred again p50 ${percentile(redeferrals.map((r) => r.again), 50)} ms past it`
        )
      }
      const lateMs = [...lastDeferral].flatMap(([id, last]) => {
        const started = startOf.get(id)
        return last.rate && started !== undefined ? [started - last.retryAt] : []
      })
      return {
        jobs: n,
        startsMs,
        drainMs: end - start,
        workerStartMs,
        results,
        rateDeferrals,
        keyDeferrals,
        maxDeferralsOfOneJob: Math.max(0, ...deferralsOf.values()),
        lateMs,
        statements
      }
    })
  const timed = await run(url, drain(), undefined, [Rated])
  const counted = await run(
    url,
    drain(StatementCount) as Effect.Effect<RateLimitResult, unknown, Services | Scope.Scope>,
    (l) => countingLayer.pipe(Layer.provide(l)),
    [Rated]
  )
  return { ...timed, statements: counted.statements }
}

export const latency = (url: string, samples: number): Promise<LatencyResult> =>
  run(
    url,
    Effect.gen(function*() {
      let started: ((t: number) => void) | undefined
      onStart = () => {
        mark("start")
        started?.(performance.now())
      }
      // An idle worker with the default poll interval: on PostgreSQL, LISTEN/NOTIFY wakes it.
      yield* Worker.make({ concurrency: 1, host: "bench" })
      yield* Effect.sleep("500 millis")
      const out: Array<number> = []
      const warmUp = 5
      for (let i = 0; i < samples + warmUp; i++) {
        const startedAt = new Promise<number>((resolve) => (started = resolve))
        const t0 = performance.now()
        mark("enqueue")
        yield* enqueue(Probe, { i })
        const t1 = yield* Effect.promise(() => startedAt)
        if (i >= warmUp) out.push(t1 - t0)
        yield* Effect.sleep("20 millis")
      }
      return { samplesMs: out }
    })
  )

// The idle worker's statements are counted over the counting wrapper in a run of their own; the
// latency is measured on the plain client, as graphile-worker's is (see hotKey).
export const crossLatency = async (
  url: string,
  samples: number,
  startEnqueuer: StartEnqueuer
): Promise<CrossLatencyResult> => {
  const idleStatementsPerSec = await run(
    url,
    Effect.gen(function*() {
      // Default settings: the poll interval and each database's wake-ups are leasehold's own.
      yield* Worker.make({ concurrency: 1, host: "bench" })
      const counter = yield* StatementCount
      yield* Effect.sleep("1 second")
      counter.reset()
      yield* Effect.sleep(`${IDLE_WINDOW_S} seconds`)
      return counter.get() / IDLE_WINDOW_S
    }) as Effect.Effect<number, unknown, Services | Scope.Scope>,
    (l) => countingLayer.pipe(Layer.provide(l))
  )
  const samplesMs = await run(
    url,
    Effect.gen(function*() {
      const out: Array<number> = []
      const all = yield* Deferred.make<void>()
      let seen = 0
      onStart = (_, sentAt) => {
        mark("start")
        if (sentAt !== undefined && seen++ >= CROSS_WARMUP) out.push(epochNow() - sentAt)
        if (seen === samples + CROSS_WARMUP) Deferred.unsafeDone(all, Effect.void)
      }
      yield* Worker.make({ concurrency: 1, host: "bench" })
      yield* Effect.sleep("1 second")
      yield* Effect.promise(startEnqueuer)
      yield* Deferred.await(all).pipe(Effect.timeoutFail({
        duration: "20 seconds",
        onTimeout: () => new Error(`only ${seen} of ${samples + CROSS_WARMUP} cross-process jobs started`)
      }))
      return out
    })
  )
  return { samplesMs, idleStatementsPerSec }
}

export const enqueueTimed = (url: string, samples: number): Promise<void> =>
  Effect.runPromise(
    Effect.gen(function*() {
      for (let i = 0; i < samples + CROSS_WARMUP; i++) {
        const [lo, hi] = CROSS_GAP_MS
        yield* Effect.sleep(Duration.millis(lo + Math.random() * (hi - lo)))
        mark("enqueue")
        yield* enqueue(Probe, { i, sentAt: epochNow() })
      }
    }).pipe(
      Effect.provide(Leasehold.layer({ jobs: types }).pipe(Layer.provideMerge(sqlLayer(url, 2))))
    ) as Effect.Effect<
      void,
      unknown,
      never
    >
  )

/**
 * Scenario 10: the Effect runtime's steps per job of scenario 1's and 2's drains (`n` jobs each,
 * one after the other on the same tables) and per cycle of scenario 4 on an idle worker, from
 * just before the enqueue to the worker's outcome hook (its outcome written), `samples` cycles
 * after five unmeasured ones. The counted cycle includes the bench's own wait for the hook.
 */
export const steps = async (url: string, n: number, concurrency: number, samples: number): Promise<StepsResult> => {
  // BENCH_STEPS_DETAIL=1: each measurement's steps per job by kind and source, on stderr (run the
  // child by hand to read them: bench/lib/steps.ts).
  const detail = process.env.BENCH_STEPS_DETAIL === "1"
  const counter = makeStepCounter({ detail })
  const show = (what: string, per: number) => {
    if (!detail) return
    console.error(`${what}: steps per job by kind and source`)
    for (const [source, count] of counter.breakdown().slice(0, 60)) {
      console.error(`${(count / per).toFixed(2).padStart(8)}  ${source}`)
    }
    counter.clear()
  }
  const drain = <A, I>(type: JobType<string, A, I, never>, payload: (i: number) => A) =>
    run(
      url,
      counter.counted(Effect.gen(function*() {
        yield* enqueueMany(type, n, payload)
        const { steps } = yield* drainWith(n, { concurrency, pollInterval: "50 millis", host: "bench" }, counter)
        return steps / n
      }))
    )
  counter.clear()
  const plainPerJob = await drain(Noop, (i) => ({ i }))
  show("plain drain", n)
  const exclusivePerJob = await drain(Keyed, (i) => ({ i, key: `job-${i}` }))
  show("exclusive drain", n)
  const cyclePerJob = await run(
    url,
    counter.counted(Effect.gen(function*() {
      let ended: () => void = () => {}
      yield* Worker.make({ concurrency: 1, host: "bench", onResult: () => Effect.sync(() => ended()) })
      yield* Effect.sleep("500 millis")
      const warmUp = 5
      let total = 0
      for (let i = 0; i < samples + warmUp; i++) {
        const outcome = new Promise<void>((resolve) => (ended = resolve))
        if (i >= warmUp) counter.start()
        yield* enqueue(Probe, { i })
        yield* Effect.promise(() => outcome)
        if (i >= warmUp) total += counter.stop()
        yield* Effect.sleep("20 millis")
      }
      return total / samples
    }))
  )
  show("enqueue-to-outcome cycle", samples)
  return { plainPerJob, exclusivePerJob, cyclePerJob }
}

export const roundTrips = (url: string, n: number, exclusive: boolean): Promise<RoundTripsResult> =>
  run(
    url,
    Effect.gen(function*() {
      const counter = yield* StatementCount
      yield* (exclusive ? enqueueMany(Keyed, n, (i) => ({ i, key: `job-${i}` })) : enqueueMany(Noop, n, (i) => ({ i })))
      counter.reset()
      yield* drainWith(n, { concurrency: 1, pollInterval: "1 second", reapInterval: "1 hour", host: "bench" })
      return { jobs: n, statements: counter.get() }
    }) as Effect.Effect<RoundTripsResult, unknown, Services | Scope.Scope>,
    (l) => countingLayer.pipe(Layer.provide(l))
  )

/** 9. `n` jobs by one `Job.enqueueMany` call (one transaction, one INSERT per 1,000 jobs). */
export const enqueueBatchOf = (url: string, n: number): Promise<DrainResult> =>
  run(
    url,
    Effect.gen(function*() {
      const payloads = Array.from({ length: n }, (_, i) => ({ i }))
      const t0 = performance.now()
      const result = yield* enqueueBatch(Noop, payloads)
      const ms = performance.now() - t0
      const counts = yield* (yield* JobStore).counts
      const stored = counts.reduce((sum, c) => sum + c.count, 0)
      if (result.inserted !== n || stored !== n) {
        return yield* Effect.dieMessage(`leasehold: inserted ${result.inserted}, stored ${stored}, expected ${n}`)
      }
      return { jobs: n, ms }
    })
  )

export const leasehold: JobSystemDriver = {
  enqueueBatch: enqueueBatchOf,
  throughput,
  exclusiveThroughput,
  hotKey,
  rateLimit,
  latency,
  crossLatency,
  enqueueTimed,
  roundTrips,
  steps
}
