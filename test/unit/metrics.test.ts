/**
 * The Prometheus metrics (src/runtime/metrics.ts, src/infra/prometheus.ts) on the in-memory store:
 * the text format (escaping, cumulative histograms), lost leases and deferrals counted per job
 * type and queue, the scrape served over HTTP, and a store that cannot be read. The counters and
 * store gauges on every adapter: test/conformance/observability.ts.
 */
import { expect, it } from "@effect/vitest"
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Layer, Logger, LogLevel, Option, Schema, TestClock } from "effect"
import { renderFamilies } from "../../src/infra/prometheus.ts"
import type { JobStoreApi } from "../../src/JobStore.ts"
import { define, enqueue, JobContext } from "../../src/runtime/Job.ts"
import * as MetricsCore from "../../src/runtime/metrics.ts"
import * as MetricsServer from "../../src/runtime/metricsServer.ts"

const Metrics = { ...MetricsCore, ...MetricsServer }
import * as Worker from "../../src/runtime/Worker.ts"
import { JobLeases, JobStore, TestLeasehold } from "../../src/testing.ts"
import { parseScrape } from "../support/prometheus.ts"

const T0 = 1_791_039_632_175

it("label values and help text are escaped; histograms are cumulative with +Inf, _sum and _count", () => {
  const text = renderFamilies([
    {
      name: "x_total",
      help: "a \\ help\nline",
      type: "counter",
      samples: [{ labels: [["job", "say \"hi\"\\\n<script>"]], value: 2 }]
    }
  ])
  expect(text).toBe(
    "# HELP x_total a \\\\ help\\nline\n# TYPE x_total counter\nx_total{job=\"say \\\"hi\\\"\\\\\\n<script>\"} 2\n"
  )
  expect(parseScrape(text).value("x_total", { job: "say \"hi\"\\\n<script>" })).toBe(2)

  Metrics.recordAttempt(
    Worker.ProcessResult.Completed({ job: { id: "1", name: "hist", queue: "q", attempt: 1 }, leaseLost: false }),
    70
  )
  Metrics.recordAttempt(
    Worker.ProcessResult.Completed({ job: { id: "2", name: "hist", queue: "q", attempt: 1 }, leaseLost: false }),
    7200_000
  )
  const s = parseScrape(scrapeFailing())
  const labels = { job: "hist", queue: "q" }
  expect(s.types.get("leasehold_attempt_duration_seconds")).toBe("histogram")
  expect(s.value("leasehold_attempt_duration_seconds_bucket", { ...labels, le: "0.05" })).toBe(0)
  expect(s.value("leasehold_attempt_duration_seconds_bucket", { ...labels, le: "0.1" })).toBe(1)
  expect(s.value("leasehold_attempt_duration_seconds_bucket", { ...labels, le: "3600" })).toBe(1)
  expect(s.value("leasehold_attempt_duration_seconds_bucket", { ...labels, le: "+Inf" })).toBe(2)
  expect(s.value("leasehold_attempt_duration_seconds_sum", labels)).toBeCloseTo(7200.07)
  expect(s.value("leasehold_attempt_duration_seconds_count", labels)).toBe(2)
  expect(s.value("leasehold_jobs_completed_total", labels)).toBe(2)
})

// A store whose every read fails as a database that went away would; a scrape of it, without its warning.
const failingStore = new Proxy({} as JobStoreApi, {
  get: (_, key) => {
    const down = Effect.fail(new SqlError({ message: "connection refused" }))
    return key === "counts" ? down : () => down
  }
})
const scrapeFailing = () =>
  Effect.runSync(
    Metrics.render.pipe(Effect.provideService(JobStore, failingStore), Logger.withMinimumLogLevel(LogLevel.None))
  )

it("a store that cannot be read: its gauges are left out and leasehold_store_up is 0", () => {
  const s = parseScrape(scrapeFailing())
  expect(s.value("leasehold_store_up")).toBe(0)
  expect(s.types.has("leasehold_queue_depth")).toBe(false)
  expect(s.types.get("leasehold_jobs_completed_total")).toBe("counter")
})

const Excl = define({
  name: "lossy",
  queue: "locks",
  schema: Schema.Struct({ steal: Schema.Boolean }),
  exclusive: true,
  // With `steal`, the run's lease is taken over while it runs: its end reports the loss.
  perform: ({ steal }) =>
    Effect.gen(function*() {
      if (!steal) return
      const ctx = yield* JobContext
      const leases = yield* JobLeases
      const lease = Option.getOrThrow(yield* ctx.lease)
      yield* leases.release({ name: lease.name, owner: ctx.claimToken })
      yield* leases.tryAcquire({ name: lease.name, owner: "thief", now: T0, ttlMs: 60_000 })
    })
})

it.effect("a lost lease and a deferral are counted per job type and queue; the scrape is served over HTTP", () =>
  Effect.gen(function*() {
    yield* TestClock.setTime(T0)
    yield* enqueue(Excl, { steal: true })
    expect(yield* Worker.processNext({ host: "h" })).toMatchObject({ _tag: "Completed", leaseLost: true })
    // the thief still holds the lease: the next one is deferred
    yield* enqueue(Excl, { steal: false })
    expect(yield* Worker.processNext({ host: "h" })).toMatchObject({ _tag: "Deferred" })

    const { port } = yield* Metrics.serve({ port: 0 })
    const reply = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/metrics`))
    expect(reply.status).toBe(200)
    expect(reply.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8")
    const s = parseScrape(yield* Effect.promise(() => reply.text()))
    const labels = { job: "lossy", queue: "locks" }
    expect(s.value("leasehold_leases_lost_total", labels)).toBe(1)
    expect(s.value("leasehold_jobs_completed_total", labels)).toBe(1)
    expect(s.value("leasehold_jobs_deferred_total", labels)).toBe(1)
    expect(s.value("leasehold_store_up")).toBe(1)
    expect(s.value("leasehold_jobs", { queue: "locks", status: "pending" })).toBe(1)
    expect(s.value("leasehold_jobs", { queue: "locks", status: "completed" })).toBe(1)
    // the deferred job is pending but not due: the queue's depth is 0
    expect(s.value("leasehold_queue_depth", { queue: "locks" })).toBe(0)
    expect(s.value("leasehold_oldest_pending_age_seconds", { queue: "locks" })).toBe(0)

    const other = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/other`))
    expect(other.status).toBe(404)
    const post = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/metrics`, { method: "POST" }))
    expect(post.status).toBe(405)
  }).pipe(Effect.scoped, Effect.provide(TestLeasehold.layer({ jobs: [Excl] }))))

it.effect("serve fails with the listen error when the port is taken", () =>
  Effect.gen(function*() {
    const { port } = yield* Metrics.serve({ port: 0 })
    const error = yield* Effect.flip(Metrics.serve({ port }))
    expect(error.message).toMatch(/EADDRINUSE/)
  }).pipe(Effect.scoped, Effect.provide(Layer.succeed(JobStore, failingStore))))
