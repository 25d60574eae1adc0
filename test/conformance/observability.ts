/**
 * What the metrics read from the store, on every adapter: due jobs and the oldest due job per
 * queue (`queueDepths`), and a scrape after attempts of each outcome (src/runtime/metrics.ts).
 * The text format itself and the HTTP server: test/unit/metrics.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Schema, TestClock } from "effect"
import { JobStore } from "../../src/JobStore.ts"
import { define, enqueue } from "../../src/runtime/Job.ts"
import * as Metrics from "../../src/runtime/metrics.ts"
import { processNext } from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor } from "../support/databases.ts"
import { withJobs } from "../support/jobs.ts"
import { parseScrape } from "../support/prometheus.ts"

const T0 = 1_791_039_632_175
const SECOND = 1000

const Step = Schema.Struct({ fail: Schema.Boolean })
// Takes two seconds of the TestClock, then fails or not (no retries: a failure is dead).
const Metered = define({
  name: "metered",
  queue: "obs",
  maxRetries: 0,
  schema: Step,
  perform: ({ fail }) =>
    Effect.zipRight(TestClock.adjust("2 seconds"), fail ? Effect.fail(new Error("no")) : Effect.void)
})
// Fails once with a retry left.
const Retried = define({ name: "retried", queue: "obs", schema: Step, perform: () => Effect.fail(new Error("again")) })

const scrape = Effect.map(Metrics.render, parseScrape)

export const observabilityConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "ob"), { timeout: 180_000 })(`Observability conformance on ${adapter}`, (it) => {
    it.effect("queueDepths: per queue, pending jobs already due and the earliest run_at among them", () =>
      withJobs(
        [Metered],
        Effect.gen(function*() {
          const store = yield* JobStore
          yield* TestClock.setTime(T0)
          // one job finished (not pending), one processing: neither counts
          yield* enqueue(Metered, { fail: false }, { queue: "gone" })
          yield* processNext({ host: "h" })
          yield* enqueue(Metered, { fail: false }, { queue: "busy" })
          const claimed = yield* store.claim({
            queues: ["busy"],
            host: "h",
            now: yield* TestClock.currentTimeMillis,
            claimToken: "t",
            timeoutCap: undefined,
            hostCap: undefined
          })
          expect(claimed._tag).toBe("Claimed")
          const now = yield* TestClock.currentTimeMillis
          yield* enqueue(Metered, { fail: false }, { queue: "mail", runAt: now - 5 * SECOND })
          yield* enqueue(Metered, { fail: false }, { queue: "mail", runAt: now })
          yield* enqueue(Metered, { fail: false }, { queue: "mail", runAt: now + 5 * SECOND })
          yield* enqueue(Metered, { fail: false }, { queue: "later", runAt: now + 60 * SECOND })
          expect(yield* store.queueDepths(now)).toEqual([{ queue: "mail", due: 2, oldestRunAt: now - 5 * SECOND }])
          expect(yield* store.queueDepths(now + 60 * SECOND)).toEqual([
            { queue: "later", due: 1, oldestRunAt: now + 60 * SECOND },
            { queue: "mail", due: 3, oldestRunAt: now - 5 * SECOND }
          ])
          expect(yield* store.queueDepths(now - 10 * SECOND)).toEqual([])
        })
      ))

    it.effect("a scrape: outcome counters and durations per job type and queue, the store's gauges", () =>
      withJobs(
        [Metered, Retried],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const labels = { job: "metered", queue: "obs" }
          const before = yield* scrape
          const delta = (after: typeof before, name: string, l: Record<string, string> = labels) =>
            (after.value(name, l) ?? 0) - (before.value(name, l) ?? 0)
          yield* enqueue(Metered, { fail: false })
          yield* enqueue(Metered, { fail: false })
          yield* enqueue(Metered, { fail: true })
          for (let i = 0; i < 3; i++) yield* processNext({ host: "h" })
          yield* enqueue(Retried, { fail: true })
          expect(yield* processNext({ host: "h" })).toMatchObject({ _tag: "Failed", willRetry: true })
          // one more, due three seconds ago, waits
          const now = yield* TestClock.currentTimeMillis
          yield* enqueue(Metered, { fail: false }, { runAt: now - 3 * SECOND })

          const after = yield* scrape
          expect(after.types.get("leasehold_jobs_completed_total")).toBe("counter")
          expect(delta(after, "leasehold_jobs_completed_total")).toBe(2)
          expect(delta(after, "leasehold_jobs_failed_total")).toBe(1)
          expect(delta(after, "leasehold_jobs_dead_total")).toBe(1)
          // a failure with a retry left is failed, not dead
          const retried = { job: "retried", queue: "obs" }
          expect(delta(after, "leasehold_jobs_failed_total", retried)).toBe(1)
          expect(delta(after, "leasehold_jobs_dead_total", retried)).toBe(0)
          // three attempts of two seconds each: above 1 s, within 2.5 s
          const bucket = (le: string) => delta(after, "leasehold_attempt_duration_seconds_bucket", { ...labels, le })
          expect(bucket("1")).toBe(0)
          expect(bucket("2.5")).toBe(3)
          expect(bucket("+Inf")).toBe(3)
          expect(delta(after, "leasehold_attempt_duration_seconds_sum")).toBeCloseTo(6)
          expect(delta(after, "leasehold_attempt_duration_seconds_count")).toBe(3)
          // read from the store at scrape time (the retried job waits for its backoff: not due)
          expect(after.value("leasehold_store_up")).toBe(1)
          expect(after.value("leasehold_jobs", { queue: "obs", status: "completed" })).toBe(2)
          expect(after.value("leasehold_jobs", { queue: "obs", status: "failed" })).toBe(1)
          expect(after.value("leasehold_jobs", { queue: "obs", status: "pending" })).toBe(2)
          expect(after.value("leasehold_queue_depth", { queue: "obs" })).toBe(1)
          expect(after.value("leasehold_oldest_pending_age_seconds", { queue: "obs" })).toBe(3)
        })
      ))
  })
