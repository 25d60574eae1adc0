/**
 * graphile-worker 0.16.x driver (PostgreSQL only).
 *
 * - throughput: `n` no-op jobs inserted up front in ONE statement (`graphile_worker.add_jobs`
 *   over `generate_series`, so the client holds no job list), then `run({ concurrency })`; the
 *   drain is timed from the `run` call to the n-th `job:complete` event (emitted after the
 *   job's row is deleted).
 * - exclusiveThroughput: the same with a distinct `queue_name` per job (graphile-worker's
 *   serial queues are its per-key exclusivity).
 * - hotKey: `n` jobs in one named queue, each sleeping `sleepMs`, `concurrency = workers`;
 *   timed from the first job's start to the n-th `job:complete`.
 * - latency: an idle runner (LISTEN/NOTIFY on `jobs:insert`); `addJob` one job at a time and
 *   time from just before the `addJob` call to the start of the task.
 * - crossLatency: the same runner (concurrency 1), the jobs added by another process
 *   (`enqueueTimed`); idle statements counted from pg_stat_database.
 *
 * Defaults are kept (pollInterval 2 s, pool of 10, prepared statements on), except that the
 * logger prints errors only.
 */
import { EventEmitter } from "node:events"
import { setTimeout as sleep } from "node:timers/promises"
import {
  Logger,
  makeWorkerUtils,
  run,
  runMigrations,
  type Runner,
  type TaskList,
  type WorkerEvents
} from "graphile-worker"
import pg from "pg"
import { CROSS_GAP_MS, CROSS_WARMUP, epochNow } from "../protocol.ts"
import { mark } from "../lib/timeline.ts"
import type {
  Background,
  CrossLatencyResult,
  DrainHooks,
  DrainResult,
  HotKeyResult,
  JobSystemDriver,
  LatencyResult,
  StartEnqueuer
} from "./types.ts"

const logger = new Logger(() => (level, message) => {
  if (String(level) === "error") console.error(`[graphile-worker] ${message}`)
})

/** Inserts `n` jobs of `task` in one statement; `queue` is a SQL expression over `g` (1…n), or null. */
const addJobsInBulk = async (url: string, task: string, n: number, queue: string | null): Promise<void> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const queueExpr = queue ?? "NULL::text"
    const r = await client.query(
      `SELECT count(*)::int AS n FROM graphile_worker.add_jobs(ARRAY(
         SELECT ROW($1::text, '{}'::json, ${queueExpr}, NULL::timestamptz, NULL::int, NULL::text, NULL::int, NULL::text[])::graphile_worker.job_spec
         FROM generate_series(1, $2::int) AS g))`,
      [task, n]
    )
    const inserted = r.rows[0]?.n
    if (inserted !== n) throw new Error(`graphile-worker: inserted ${String(inserted)} jobs, expected ${n}`)
  } finally {
    await client.end()
  }
}

const remainingJobs = async (url: string): Promise<number> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const r = await client.query("SELECT count(*)::int AS n FROM graphile_worker._private_jobs")
    return Number(r.rows[0]?.n)
  } finally {
    await client.end()
  }
}

/** Resolves when `count()` reaches `target`, checked on every event; rejects after `timeoutMs`. */
const completions = (events: WorkerEvents, target: number, timeoutMs: number) => {
  let done = 0
  let failed: unknown = undefined
  let resolve: (at: number) => void = () => {}
  let reject: (e: unknown) => void = () => {}
  const promise = new Promise<number>((res, rej) => {
    resolve = res
    reject = rej
  })
  const timer = setTimeout(
    () => reject(new Error(`graphile-worker: ${done}/${target} jobs completed after ${timeoutMs} ms`)),
    timeoutMs
  )
  events.on("job:complete", ({ error }) => {
    if (error !== undefined && error !== null) failed ??= error
    done++
    if (failed !== undefined) reject(failed)
    else if (done === target) {
      clearTimeout(timer)
      resolve(performance.now())
    }
  })
  return { promise, count: () => done, cancel: () => clearTimeout(timer) }
}

/**
 * Runs a runner until `n` jobs completed. Timed from the `run` call, or with `fromFirstStart`
 * from the first job's start (so runner start-up is left out of a short drain).
 */
const drain = async (
  url: string,
  n: number,
  concurrency: number,
  taskList: TaskList,
  timeoutMs: number,
  options: { readonly hooks?: DrainHooks; readonly fromFirstStart?: boolean } = {}
): Promise<number> => {
  const events: WorkerEvents = new EventEmitter() as WorkerEvents
  const done = completions(events, n, timeoutMs)
  let firstStart = Number.NaN
  events.once("job:start", () => {
    firstStart = performance.now()
  })
  options.hooks?.drainStarting()
  const t0 = performance.now()
  let runner: Runner | undefined
  try {
    runner = await run({ connectionString: url, concurrency, taskList, noHandleSignals: true, logger, events })
    const t1 = await done.promise
    return t1 - (options.fromFirstStart === true ? firstStart : t0)
  } finally {
    done.cancel()
    if (runner !== undefined) await runner.stop()
  }
}

const DRAIN_TIMEOUT_MS = 10 * 60_000

/**
 * The background rows of scenarios 1d and 1e: `finished` jobs that stay in the table (graphile
 * deletes completed jobs, so these are permanently failed: attempts = max_attempts) and `future`
 * jobs due in a day, added through add_jobs, then VACUUM ANALYZE.
 */
const insertBackground = async (url: string, background: Background | undefined): Promise<void> => {
  if (background === undefined || background.finished + background.future === 0) return
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const add = (n: number, runAt: string) =>
      client.query(
        `SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(
           SELECT ROW('noop', '{}'::json, NULL::text, ${runAt}, NULL::int, NULL::text, NULL::int, NULL::text[])::graphile_worker.job_spec
           FROM generate_series(1, $1::int) AS g))`,
        [n]
      )
    if (background.finished > 0) {
      await add(background.finished, "now() - interval '1 minute'")
      await client.query(
        "UPDATE graphile_worker._private_jobs SET attempts = max_attempts, last_error = 'failed for good'"
      )
    }
    if (background.future > 0) await add(background.future, "now() + interval '1 day'")
    await client.query("VACUUM ANALYZE graphile_worker._private_jobs")
  } finally {
    await client.end()
  }
}

const throughputWith =
  (queue: (n: number) => string | null) =>
  async (url: string, n: number, concurrency: number, hooks: DrainHooks): Promise<DrainResult> => {
    await runMigrations({ connectionString: url, logger })
    await insertBackground(url, hooks.background)
    await addJobsInBulk(url, "noop", n, queue(n))
    const ms = await drain(url, n, concurrency, { noop: async () => {} }, DRAIN_TIMEOUT_MS, { hooks })
    const left = (await remainingJobs(url)) - (hooks.background?.finished ?? 0) - (hooks.background?.future ?? 0)
    if (left !== 0) throw new Error(`graphile-worker: ${left} jobs left after the drain`)
    return { jobs: n, ms }
  }

export const throughput = throughputWith(() => null)

/** One serial queue per job: `'q' || g`. */
export const exclusiveThroughput = throughputWith(() => "'q' || g::text")

export const hotKey = async (url: string, n: number, sleepMs: number, workers: number): Promise<HotKeyResult> => {
  await runMigrations({ connectionString: url, logger })
  await addJobsInBulk(url, "sleep", n, "'hot'::text")
  const handler = async () => {
    mark("start")
    await sleep(sleepMs)
    mark("end")
  }
  const ms = await drain(url, n, workers, { sleep: handler }, DRAIN_TIMEOUT_MS, {
    fromFirstStart: true
  })
  const left = await remainingJobs(url)
  if (left !== 0) throw new Error(`graphile-worker: ${left} jobs left after the hot-key drain`)
  return { jobs: n, sleepMs, ms }
}

const WARMUP = 10
const IDLE_GAP_MS = 20
const SAMPLE_TIMEOUT_MS = 10_000

export const latency = async (url: string, samples: number): Promise<LatencyResult> => {
  await runMigrations({ connectionString: url, logger })
  const events: WorkerEvents = new EventEmitter() as WorkerEvents
  let startedAt = Number.NaN
  let onComplete: () => void = () => {}
  events.on("job:complete", () => onComplete())
  const runner = await run({
    connectionString: url,
    concurrency: 10,
    noHandleSignals: true,
    logger,
    events,
    taskList: {
      probe: async () => {
        startedAt = performance.now()
        mark("start")
      }
    }
  })
  const utils = await makeWorkerUtils({ connectionString: url, logger })
  const out: Array<number> = []
  try {
    await sleep(200) // the runner's LISTEN is in place and it has found the queue empty
    for (let i = 0; i < WARMUP + samples; i++) {
      startedAt = Number.NaN
      const completed = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`graphile-worker: probe ${i} not done in ${SAMPLE_TIMEOUT_MS} ms`)),
          SAMPLE_TIMEOUT_MS
        )
        onComplete = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      const t0 = performance.now()
      mark("enqueue")
      await utils.addJob("probe", {})
      await completed
      if (i >= WARMUP) out.push(startedAt - t0)
      await sleep(IDLE_GAP_MS)
    }
  } finally {
    await utils.release()
    await runner.stop()
  }
  return { samplesMs: out }
}

/** Transactions the bench database has seen (every statement outside one is one), from pg_stat_database. */
const transactions = async (url: string): Promise<number> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const r = await client.query(
      "SELECT (xact_commit + xact_rollback)::float8 AS n FROM pg_stat_database WHERE datname = current_database()"
    )
    return Number(r.rows[0]?.n)
  } finally {
    await client.end()
  }
}

const IDLE_WINDOW_MS = 5_000

export const crossLatency = async (
  url: string,
  samples: number,
  startEnqueuer: StartEnqueuer
): Promise<CrossLatencyResult> => {
  await runMigrations({ connectionString: url, logger })
  const out: Array<number> = []
  let seen = 0
  let allStarted: () => void = () => {}
  const all = new Promise<void>((resolve) => (allStarted = resolve))
  const runner = await run({
    connectionString: url,
    concurrency: 1,
    noHandleSignals: true,
    logger,
    taskList: {
      probe: async (payload) => {
        const sentAt = (payload as { sentAt?: number }).sentAt
        mark("start")
        if (sentAt !== undefined && seen++ >= CROSS_WARMUP) out.push(epochNow() - sentAt)
        if (seen === samples + CROSS_WARMUP) allStarted()
      }
    }
  })
  try {
    await sleep(1_000)
    // Statistics reach pg_stat_database when a backend's transaction ends (at most a second
    // late), and each reading is itself one transaction: read, wait, read, subtract that one.
    const before = await transactions(url)
    await sleep(IDLE_WINDOW_MS)
    const idleStatementsPerSec = ((await transactions(url)) - before - 1) / (IDLE_WINDOW_MS / 1000)
    await startEnqueuer()
    await Promise.race([
      all,
      sleep(20_000).then(() => {
        throw new Error(`graphile-worker: only ${seen} of ${samples + CROSS_WARMUP} cross-process jobs started`)
      })
    ])
    return { samplesMs: out, idleStatementsPerSec }
  } finally {
    await runner.stop()
  }
}

export const enqueueTimed = async (url: string, samples: number): Promise<void> => {
  const utils = await makeWorkerUtils({ connectionString: url, logger })
  try {
    for (let i = 0; i < samples + CROSS_WARMUP; i++) {
      const [lo, hi] = CROSS_GAP_MS
      await sleep(lo + Math.random() * (hi - lo))
      mark("enqueue")
      await utils.addJob("probe", { i, sentAt: epochNow() })
    }
  } finally {
    await utils.release()
  }
}

/**
 * 9. `n` jobs sent by the client in one statement, as graphile-worker's own `addJobs` (0.17)
 * does: `add_jobs` over `json_populate_recordset` of the job specs (0.16 has the SQL function
 * but not yet the JavaScript wrapper). Migrated first, outside the timing.
 */
export const enqueueBatch = async (url: string, n: number): Promise<DrainResult> => {
  await runMigrations({ connectionString: url, logger })
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const specs = Array.from({ length: n }, (_, i) => ({ identifier: "noop", payload: { i } }))
    const t0 = performance.now()
    await client.query(
      "SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(SELECT json_populate_recordset(NULL::graphile_worker.job_spec, $1::json)))",
      [JSON.stringify(specs)]
    )
    const ms = performance.now() - t0
    const stored = await remainingJobs(url)
    if (stored !== n) throw new Error(`graphile-worker: stored ${stored} jobs, expected ${n}`)
    return { jobs: n, ms }
  } finally {
    await client.end()
  }
}

export const graphileWorker: JobSystemDriver = {
  enqueueBatch,
  throughput,
  exclusiveThroughput,
  hotKey,
  latency,
  crossLatency,
  enqueueTimed
}
