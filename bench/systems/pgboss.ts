/**
 * pg-boss 10.x driver (PostgreSQL only): throughput.
 *
 * `n` no-op jobs are inserted up front with one `boss.insert` (one statement), then `workers`
 * calls to `boss.work(queue, { batchSize, pollingIntervalSeconds })` drain them. The drain is
 * timed from the first `work` call until every job is `completed` in the database (pg-boss
 * completes a batch without awaiting it, so the handler count alone would stop too early).
 *
 * Polling: a pg-boss 10 worker waits `pollingInterval − (time the batch took)` after EVERY
 * fetch, even a full one, so its ceiling is workers × batchSize / pollingInterval. The default
 * (2 s) caps 10 workers × 50 at 250 jobs/s; we use the smallest interval pg-boss accepts,
 * 0.5 s (cap 1,000 jobs/s). Everything else is pg-boss's default.
 */
import { setTimeout as sleep } from "node:timers/promises"
import PgBoss from "pg-boss"
import {
  PG_BOSS_BATCH_SIZE as BATCH_SIZE,
  PG_BOSS_POLLING_INTERVAL_SECONDS as POLLING_INTERVAL_SECONDS
} from "../protocol.ts"
import type { DrainHooks, DrainResult, JobSystemDriver } from "./types.ts"
const QUEUE = "noop"
const DRAIN_TIMEOUT_MS = 10 * 60_000

const completedCount = async (boss: PgBoss): Promise<number> => {
  const r = await boss.getDb().executeSql(
    "SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state = 'completed'",
    [QUEUE]
  )
  return Number(r.rows[0]?.n)
}

/** 1. `workers` pg-boss workers with `batchSize` 50 (the "10 workers, batch 50"). */
export const throughput = async (url: string, n: number, workers: number, hooks: DrainHooks): Promise<DrainResult> => {
  const boss = new PgBoss({ connectionString: url })
  let bossError: unknown = undefined
  boss.on("error", (e) => {
    bossError ??= e
    console.error("[pg-boss]", e)
  })
  await boss.start()
  try {
    await boss.createQueue(QUEUE)
    await boss.insert(Array.from({ length: n }, () => ({ name: QUEUE, data: {} })))
    hooks.drainStarting()
    let handled = 0
    const t0 = performance.now()
    for (let w = 0; w < workers; w++) {
      await boss.work(
        QUEUE,
        { batchSize: BATCH_SIZE, pollingIntervalSeconds: POLLING_INTERVAL_SECONDS },
        async (jobs) => {
          handled += jobs.length
        }
      )
    }
    // Poll the database only once every job has reached a handler; bounded by the deadline.
    const deadline = t0 + DRAIN_TIMEOUT_MS
    while (handled < n && performance.now() < deadline && bossError === undefined) await sleep(5)
    while (performance.now() < deadline && bossError === undefined) {
      if ((await completedCount(boss)) >= n) break
      await sleep(5)
    }
    const ms = performance.now() - t0
    if (bossError !== undefined) throw bossError
    if (performance.now() >= deadline) {
      throw new Error(`pg-boss: drain not finished in ${DRAIN_TIMEOUT_MS} ms (${handled}/${n} handled)`)
    }
    return { jobs: n, ms }
  } finally {
    await boss.stop({ graceful: true, wait: true, timeout: 10_000 })
  }
}

/** 9. `n` jobs by one `boss.insert` call (one statement). */
export const enqueueBatch = async (url: string, n: number): Promise<DrainResult> => {
  const boss = new PgBoss({ connectionString: url })
  boss.on("error", (e) => console.error("[pg-boss]", e))
  await boss.start()
  try {
    await boss.createQueue(QUEUE)
    const jobs = Array.from({ length: n }, (_, i) => ({ name: QUEUE, data: { i } }))
    const t0 = performance.now()
    await boss.insert(jobs)
    const ms = performance.now() - t0
    const r = await boss.getDb().executeSql("SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1", [QUEUE])
    if (Number(r.rows[0]?.n) !== n) throw new Error(`pg-boss: stored ${String(r.rows[0]?.n)} jobs, expected ${n}`)
    return { jobs: n, ms }
  } finally {
    await boss.stop({ graceful: true, wait: true, timeout: 10_000 })
  }
}

export const pgBoss: JobSystemDriver = { throughput, enqueueBatch }
