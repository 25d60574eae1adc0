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
import { Deferred, Duration, Effect, Layer, Logger, LogLevel, Ref, Schema, type Scope } from "effect"
import { performance } from "node:perf_hooks"
import { JobStore } from "../../src/JobStore.ts"
import { define, enqueue, enqueueMany as enqueueBatch, type AnyJobType, type JobType } from "../../src/runtime/Job.ts"
import * as Leasehold from "../../src/runtime/Leasehold.ts"
import * as Migrator from "../../src/runtime/migrate.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { countingLayer, sqlLayer, StatementCount, type StatementCountApi } from "../lib/sql.ts"
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

/** Runs `program` with migrated tables and leasehold's services over the database at `url`. */
const run = <A>(
  url: string,
  program: Effect.Effect<A, unknown, Services | Scope.Scope>,
  below?: (l: Layer.Layer<SqlClient.SqlClient, unknown>) => Layer.Layer<SqlClient.SqlClient | StatementCount, unknown>
) => {
  const client = below ? below(sqlLayer(url, 20)) : sqlLayer(url, 20)
  const services = Leasehold.layer({ jobs: types }).pipe(Layer.provideMerge(client))
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
  latency,
  crossLatency,
  enqueueTimed,
  roundTrips,
  steps
}
