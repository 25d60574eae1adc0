/**
 * leasehold's metrics in the Prometheus text format: counters of attempt outcomes, lost leases and
 * reaped rows and a histogram of attempt durations, labelled by job type and queue, kept in this
 * process; and, read from the store at scrape time, jobs per queue and status, queue depth and the
 * oldest due job's age, and the slots in use of the most used limits. `render` is the scrape's
 * text; ./metricsServer.ts serves it.
 *
 * The counters are plain numbers in a map per job type and queue, updated once per attempt
 * without allocating, on every job's path: an Effect `Metric` with tags
 * would look its series up in a registry, building a key from the tags, on every update.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Effect, Metric, Option } from "effect"
import type { MetricKey } from "effect/MetricKey"
import {
  bucketOf,
  histogramSamples,
  type Labels,
  type MetricFamily,
  PROMETHEUS_CONTENT_TYPE,
  renderFamilies,
  type Sample
} from "../infra/prometheus.ts"
import { JobLeases, JobStore } from "../ports/JobStore.ts"
import type { ProcessResult } from "./worker/results.ts"

export { PROMETHEUS_CONTENT_TYPE } from "../infra/prometheus.ts"

/** The attempt-duration histogram's bucket bounds, in seconds. */
export const DURATION_BUCKETS: ReadonlyArray<number> = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
  60,
  300,
  900,
  3600
]

/** The bucket bounds, in seconds, of how long a job waits when a limit defers it. */
export const LIMIT_WAIT_BUCKETS: ReadonlyArray<number> = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 3600]

/** Which limit deferred a job, from the name it waits on (src/core/rate.ts, src/core/lease.ts). */
type LimitKind = "key" | "cap" | "rate"
const limitOf = (waitsOn: string): LimitKind =>
  waitsOn.startsWith("rate:") ? "rate" : waitsOn.startsWith("cap:") ? "cap" : "key"

/** Waits of one limit kind: observations per bucket of LIMIT_WAIT_BUCKETS, and their sum. */
interface Waits {
  readonly buckets: Float64Array
  seconds: number
}

/** One job type's counters in one queue. */
interface Series {
  readonly labels: Labels
  completed: number
  failed: number
  dead: number
  deferred: number
  fenced: number
  cancelled: number
  leasesLost: number
  reaped: number
  rateLimited: number
  capped: number
  /** Observations per bucket of DURATION_BUCKETS, the last one above every bound. */
  readonly buckets: Float64Array
  seconds: number
  /** Deferrals by limit kind, made when a kind first defers a job of this series. */
  readonly waits: Map<LimitKind, Waits>
}

// Job type → queue → series: two lookups and no allocation per attempt once a pair is known.
const byType = new Map<string, Map<string, Series>>()
let running = 0

const seriesOf = (job: string, queue: string): Series => {
  let queues = byType.get(job)
  if (queues === undefined) byType.set(job, queues = new Map())
  let s = queues.get(queue)
  if (s === undefined) {
    s = {
      labels: [["job", job], ["queue", queue]],
      completed: 0,
      failed: 0,
      dead: 0,
      deferred: 0,
      fenced: 0,
      cancelled: 0,
      leasesLost: 0,
      reaped: 0,
      rateLimited: 0,
      capped: 0,
      buckets: new Float64Array(DURATION_BUCKETS.length + 1),
      seconds: 0,
      waits: new Map()
    }
    queues.set(queue, s)
  }
  return s
}

/**
 * Counts one finished attempt and its duration in ms (src/runtime/worker/observe.ts calls it for
 * every attempt of every entry point), ended at epoch ms `now`. A failed attempt counts as
 * failed, and also as dead when the job has no retries left; a deferral also by the limit that
 * deferred it, with how long the job waits (its retry time less `now`).
 */
export const recordAttempt = (result: ProcessResult, ms: number, now?: number): void => {
  if (!("job" in result)) return
  const s = seriesOf(result.job.name, result.job.queue)
  const seconds = ms / 1000
  s.buckets[bucketOf(DURATION_BUCKETS, seconds)]!++
  s.seconds += seconds
  switch (result._tag) {
    case "Completed":
      s.completed++
      break
    case "Failed":
      s.failed++
      if (!result.willRetry) s.dead++
      break
    case "Fenced":
      s.fenced++
      break
    case "Cancelled":
      s.cancelled++
      break
    case "Deferred": {
      s.deferred++
      const kind = limitOf(result.leaseName)
      if (kind === "rate") s.rateLimited++
      else if (kind === "cap") s.capped++
      if (now !== undefined) {
        let waits = s.waits.get(kind)
        if (waits === undefined) {
          s.waits.set(kind, waits = { buckets: new Float64Array(LIMIT_WAIT_BUCKETS.length + 1), seconds: 0 })
        }
        const wait = Math.max(0, result.retryAt - now) / 1000
        waits.buckets[bucketOf(LIMIT_WAIT_BUCKETS, wait)]!++
        waits.seconds += wait
      }
      break
    }
  }
  if ("leaseLost" in result && result.leaseLost) s.leasesLost++
}

/** Counts a stale row the reaper took back. */
export const recordReaped = (job: string, queue: string): void => {
  seriesOf(job, queue).reaped++
}

/** Moves the gauge of attempts running in this process's long-running workers. */
export const addRunning = (delta: number): void => {
  running += delta
}

/** Forgets every count (for tests that read exact values). */
export const resetCounters = (): void => {
  byType.clear()
  running = 0
}

const counter = (name: string, help: string, value: (s: Series) => number): MetricFamily => {
  const samples: Array<Sample> = []
  for (const queues of byType.values()) {
    for (const s of queues.values()) samples.push({ labels: s.labels, value: value(s) })
  }
  return { name, help, type: "counter", samples }
}

/** The in-process families: outcome counters, lost leases, reaped rows, running attempts, durations. */
const processFamilies = (): Array<MetricFamily> => {
  const durations: Array<Sample> = []
  const waits: Array<Sample> = []
  for (const queues of byType.values()) {
    for (const s of queues.values()) {
      durations.push(...histogramSamples(s.labels, DURATION_BUCKETS, s.buckets, s.seconds))
      for (const [kind, w] of s.waits) {
        waits.push(...histogramSamples([...s.labels, ["limit", kind]], LIMIT_WAIT_BUCKETS, w.buckets, w.seconds))
      }
    }
  }
  return [
    counter("leasehold_jobs_completed_total", "Attempts that completed.", (s) => s.completed),
    counter(
      "leasehold_jobs_failed_total",
      "Attempts that failed (perform failed or timed out, or the payload or type was bad), retried or not.",
      (s) => s.failed
    ),
    counter("leasehold_jobs_dead_total", "Failed attempts that left the job dead (no retries left).", (s) => s.dead),
    counter(
      "leasehold_jobs_deferred_total",
      "Attempts deferred by a limit: a busy key, the type's cap or a rate limit (the attempt was given back).",
      (s) => s.deferred
    ),
    counter(
      "leasehold_rate_limited_total",
      "Attempts deferred because their key's (or type's) rate limit was reached.",
      (s) => s.rateLimited
    ),
    counter(
      "leasehold_type_capped_total",
      "Attempts deferred because their type's cap (typeConcurrencyLimit) was reached.",
      (s) => s.capped
    ),
    counter(
      "leasehold_jobs_fenced_total",
      "Attempts whose claim had been reaped and re-claimed (nothing recorded).",
      (s) => s.fenced
    ),
    counter(
      "leasehold_jobs_cancelled_total",
      "Attempts ended because their job was cancelled (before starting or at a heartbeat; nothing else recorded).",
      (s) => s.cancelled
    ),
    counter(
      "leasehold_leases_lost_total",
      "Runs whose lease was taken over before they ended (a possible overlap, reported).",
      (s) => s.leasesLost
    ),
    counter("leasehold_jobs_reaped_total", "Stale processing rows the reaper took back.", (s) => s.reaped),
    {
      name: "leasehold_attempts_running",
      help: "Attempts running now in this process's long-running workers.",
      type: "gauge",
      samples: [{ labels: [], value: running }]
    },
    {
      name: "leasehold_attempt_duration_seconds",
      help: "How long attempts took, from the start of the attempt to its recorded outcome.",
      type: "histogram",
      samples: durations
    },
    {
      name: "leasehold_limit_waits_seconds",
      help: "How long a limit deferred a job (until its retry), by the limit: key, cap or rate.",
      type: "histogram",
      samples: waits
    }
  ]
}

/**
 * The SQL retry counters (src/adapters/sql/retry.ts), Effect `Metric`s tagged `purpose`: rare
 * events, read from Effect's registry at scrape time.
 */
const sqlRetryFamilies = (): Array<MetricFamily> => {
  const families = new Map<string, Array<Sample>>()
  for (const pair of Metric.unsafeSnapshot()) {
    const key = pair.metricKey as MetricKey.Untyped
    if (!key.name.startsWith("leasehold_sql_")) continue
    const state = pair.metricState as { readonly count?: number | bigint }
    if (state.count === undefined) continue
    const samples = families.get(key.name) ?? []
    samples.push({ labels: key.tags.map((t) => [t.key, t.value] as const), value: Number(state.count) })
    families.set(key.name, samples)
  }
  const help: Record<string, string> = {
    leasehold_sql_transient_retries: "Statements sent again after a deadlock or serialization failure.",
    leasehold_sql_retries_exhausted: "Statements whose retries gave up."
  }
  return [...families].map(([name, samples]) => ({
    name: `${name}_total`,
    help: help[name] ?? name,
    type: "counter",
    samples
  }))
}

/** The store's gauges at `now`: jobs per queue and status, due jobs per queue, the oldest due job's age. */
const storeFamilies = (now: number): Effect.Effect<Array<MetricFamily>, SqlError, JobStore> =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const counts = yield* store.counts
    const depths = yield* store.queueDepths(now)
    const byQueue = new Map(depths.map((d) => [d.queue, d]))
    const queues = [...new Set([...counts.map((c) => c.queue), ...depths.map((d) => d.queue)])].sort()
    return [
      {
        name: "leasehold_jobs",
        help: "Jobs in the table, per queue and status.",
        type: "gauge",
        samples: counts.map((c) => ({ labels: [["queue", c.queue], ["status", c.status]], value: c.count }))
      },
      {
        name: "leasehold_queue_depth",
        help: "Pending jobs that are due (run_at passed) and waiting to be claimed.",
        type: "gauge",
        samples: queues.map((q) => ({ labels: [["queue", q]], value: byQueue.get(q)?.due ?? 0 }))
      },
      {
        name: "leasehold_oldest_pending_age_seconds",
        help: "How long the longest-waiting due job has been due (0 when none is).",
        type: "gauge",
        samples: queues.map((q) => {
          const d = byQueue.get(q)
          return { labels: [["queue", q]], value: d === undefined ? 0 : Math.max(0, now - d.oldestRunAt) / 1000 }
        })
      }
    ] satisfies Array<MetricFamily>
  })

/** How many limits `leasehold_limit_slots_in_use` shows: the most used. */
const TOP_LIMITS = 20

/**
 * Slots in use now per limit, from the lease table (JobLeases, when the runtime has it): a key's
 * lease and its slots, a type's cap, a key's rate slots; the most used first. Names hashed to
 * fit the table (`slot:…#i`) count under their hash.
 */
const limitFamilies = (now: number): Effect.Effect<Array<MetricFamily>, SqlError> =>
  Effect.gen(function*() {
    const leases = yield* Effect.serviceOption(JobLeases)
    if (Option.isNone(leases) || !(yield* leases.value.tableExists)) return []
    const inUse = new Map<string, number>()
    for (const row of yield* leases.value.list) {
      if (row.expiresAt < now) continue
      const base = row.name.replace(/#\d+$/, "")
      inUse.set(base, (inUse.get(base) ?? 0) + 1)
    }
    const top = [...inUse].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, TOP_LIMITS)
    return [{
      name: "leasehold_limit_slots_in_use",
      help:
        `Slots held now of the ${TOP_LIMITS} most used limits: a key's (key), a type's cap (cap), a rate limit's (rate).`,
      type: "gauge",
      samples: top.map(([name, count]) => ({
        labels: [["limit", name.startsWith("rate:") ? "rate" : name.startsWith("cap:") ? "cap" : "key"], [
          "name",
          name
        ]],
        value: count
      }))
    }] satisfies Array<MetricFamily>
  })

/**
 * One scrape: this process's counters and the store's gauges, in the Prometheus text format.
 * Never fails: when the store cannot be read, its gauges are left out and `leasehold_store_up`
 * is 0 (and a warning is logged).
 */
export const render: Effect.Effect<string, never, JobStore> = Effect.gen(function*() {
  const now = yield* Clock.currentTimeMillis
  const stored = yield* Effect.either(Effect.zipWith(storeFamilies(now), limitFamilies(now), (a, b) => [...a, ...b]))
  if (stored._tag === "Left") yield* Effect.logWarning("metrics: the job store could not be read", stored.left)
  const up: MetricFamily = {
    name: "leasehold_store_up",
    help: "Whether this scrape could read the job store (1) or not (0).",
    type: "gauge",
    samples: [{ labels: [], value: stored._tag === "Right" ? 1 : 0 }]
  }
  return renderFamilies([
    ...processFamilies(),
    ...sqlRetryFamilies(),
    up,
    ...(stored._tag === "Right" ? stored.right : [])
  ])
})
