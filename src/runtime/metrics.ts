/**
 * leasehold's metrics in the Prometheus text format: counters of attempt outcomes, lost leases and
 * reaped rows and a histogram of attempt durations, labelled by job type and queue, kept in this
 * process; and, read from the store at scrape time, jobs per queue and status, queue depth and the
 * oldest due job's age. `render` is the scrape's text, `handler` serves it on an app's node:http
 * (or Express) server, `serve` on a port of its own (`leasehold worker --metrics-port`).
 *
 * The counters are plain numbers in a map per job type and queue, updated once per attempt
 * without allocating, on every job's path: an Effect `Metric` with tags
 * would look its series up in a registry, building a key from the tags, on every update.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Effect, Metric, Runtime, type Scope } from "effect"
import type { MetricKey } from "effect/MetricKey"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import {
  bucketOf,
  histogramSamples,
  type Labels,
  type MetricFamily,
  PROMETHEUS_CONTENT_TYPE,
  renderFamilies,
  type Sample
} from "../infra/prometheus.ts"
import { JobStore } from "../ports/JobStore.ts"
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
  /** Observations per bucket of DURATION_BUCKETS, the last one above every bound. */
  readonly buckets: Float64Array
  seconds: number
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
      buckets: new Float64Array(DURATION_BUCKETS.length + 1),
      seconds: 0
    }
    queues.set(queue, s)
  }
  return s
}

/**
 * Counts one finished attempt and its duration in ms (src/runtime/worker/observe.ts calls it for
 * every attempt of every entry point). A failed attempt counts as failed, and also as dead when
 * the job has no retries left.
 */
export const recordAttempt = (result: ProcessResult, ms: number): void => {
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
    case "Deferred":
      s.deferred++
      break
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
  for (const queues of byType.values()) {
    for (const s of queues.values()) {
      durations.push(...histogramSamples(s.labels, DURATION_BUCKETS, s.buckets, s.seconds))
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
      "Attempts deferred because their lease was busy (the attempt was given back).",
      (s) => s.deferred
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

/**
 * One scrape: this process's counters and the store's gauges, in the Prometheus text format.
 * Never fails: when the store cannot be read, its gauges are left out and `leasehold_store_up`
 * is 0 (and a warning is logged).
 */
export const render: Effect.Effect<string, never, JobStore> = Effect.gen(function*() {
  const now = yield* Clock.currentTimeMillis
  const stored = yield* Effect.either(storeFamilies(now))
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

/**
 * What the handler reads of a node:http request. Structural, so that leasehold's public types
 * never name node:http: an app compiled without @types/node still type-checks (test/e2e/package.test.ts).
 */
export interface MetricsRequest {
  readonly method?: string | undefined
}

/** What the handler writes to a node:http response (a `ServerResponse` is one). */
export interface MetricsResponse {
  writeHead(status: number, headers?: Record<string, string>): MetricsResponse
  end(body?: string): unknown
}

/** A node:http request handler, as `handler` gives it (Express accepts it as middleware too). */
export type MetricsHandler = (request: MetricsRequest, response: MetricsResponse) => void

/**
 * A node:http handler that answers every request it is given with a scrape (`render`); mount it
 * on the path you choose (`/metrics`). It runs on the runtime it is built in, so its JobStore
 * is that runtime's.
 */
export const handler: Effect.Effect<MetricsHandler, never, JobStore> = Effect.map(
  Effect.runtime<JobStore>(),
  (runtime) => {
    const run = Runtime.runPromise(runtime)
    return (request, response) => {
      if (request.method !== "GET" && request.method !== "HEAD") {
        response.writeHead(405, { allow: "GET, HEAD" }).end()
        return
      }
      run(render).then(
        (text) => {
          response.writeHead(200, { "content-type": PROMETHEUS_CONTENT_TYPE })
          response.end(request.method === "HEAD" ? undefined : text)
        },
        (e) => response.writeHead(500).end(String(e))
      )
    }
  }
)

/** Where `serve` listens. */
export interface ServeOptions {
  /** The TCP port (0: any free one; the server's `port` says which). */
  readonly port: number
  /** The address to listen on (default 127.0.0.1; 0.0.0.0 for every interface). */
  readonly host?: string | undefined
}

/** A running metrics server. */
export interface MetricsServer {
  /** The port it listens on. */
  readonly port: number
}

/**
 * Serves `/metrics` on a server of its own for as long as the scope is open (any other path:
 * 404). Fails when the port cannot be listened on (in use, not allowed).
 */
export const serve = (options: ServeOptions): Effect.Effect<MetricsServer, Error, JobStore | Scope.Scope> =>
  Effect.gen(function*() {
    const handle = yield* handler
    const server = createServer((request, response) => {
      const path = (request.url ?? "/").split("?")[0]
      if (path === "/metrics") handle(request, response)
      else response.writeHead(404, { "content-type": "text/plain" }).end("not found: try /metrics\n")
    })
    yield* Effect.acquireRelease(
      Effect.async<void, Error>((resume) => {
        server.once("error", (e) => resume(Effect.fail(e)))
        server.listen(options.port, options.host ?? "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
    return { port: (server.address() as AddressInfo).port }
  })
