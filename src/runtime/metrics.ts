/**
 * leasehold's metrics (Effect `Metric`): counters per attempt outcome, a gauge of running
 * attempts and a histogram of attempt durations. Export them with any Effect metrics exporter.
 */
import { Metric, MetricBoundaries } from "effect"

/** Attempts that completed. */
export const completed = Metric.counter("leasehold_jobs_completed", { description: "attempts that completed" })
/** Attempts that failed for good (dead). */
export const failed = Metric.counter("leasehold_jobs_failed", {
  description: "attempts that failed with no retries left"
})
/** Attempts that failed and were scheduled to retry. */
export const retried = Metric.counter("leasehold_jobs_retried", { description: "attempts that failed and will retry" })
/** Attempts whose claim had been reaped and re-claimed (nothing recorded). */
export const fenced = Metric.counter("leasehold_jobs_fenced", { description: "attempts fenced by a newer claim" })
/** Attempts that found their lease busy and were deferred. */
export const deferred = Metric.counter("leasehold_jobs_deferred", { description: "attempts deferred on a busy lease" })
/**
 * Runs whose lease was taken over before they ended (a possible overlap, reported), counted where
 * the loss is reported (src/runtime/worker/outcome.ts), so processNext, processQueue and tick count too.
 */
export const leasesLost = Metric.counter("leasehold_leases_lost", { description: "runs whose lease was lost" })
/** Stale rows the reaper took back. */
export const reaped = Metric.counter("leasehold_jobs_reaped", { description: "stale processing rows reaped" })
/** Attempts running now in this process. */
export const running = Metric.gauge("leasehold_attempts_running", { description: "attempts running in this process" })
/** How long attempts took, in milliseconds. */
export const duration = Metric.histogram(
  "leasehold_attempt_duration_ms",
  MetricBoundaries.exponential({ start: 1, factor: 2, count: 20 }),
  "attempt duration in milliseconds"
)
