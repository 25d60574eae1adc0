/**
 * leasehold's job scenarios: SLOTS TO FILL once the worker exists.
 *
 * Each function below currently throws `new Error(LEASEHOLD_PENDING)`; the orchestrator
 * (`bench/run.ts`) recognises exactly that message, prints "pending" for the scenario and
 * stops trying it in later rounds. Replace a body and the scenario runs; nothing else changes.
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
import { isPending, LEASEHOLD_PENDING } from "../protocol.ts"
import type { DrainHooks, DrainResult, HotKeyResult, JobSystemDriver, LatencyResult, RoundTripsResult } from "./types.ts"

/** The message the orchestrator treats as "not built yet" (defined in ../protocol.ts). */
export { isPending, LEASEHOLD_PENDING }

const pending = (): never => {
  throw new Error(LEASEHOLD_PENDING)
}

export const throughput = async (_url: string, _n: number, _concurrency: number, _hooks: DrainHooks): Promise<DrainResult> =>
  pending()

export const exclusiveThroughput = async (
  _url: string,
  _n: number,
  _concurrency: number,
  _hooks: DrainHooks
): Promise<DrainResult> => pending()

export const hotKey = async (_url: string, _n: number, _sleepMs: number, _workers: number): Promise<HotKeyResult> =>
  pending()

export const latency = async (_url: string, _samples: number): Promise<LatencyResult> => pending()

export const roundTrips = async (_url: string, _n: number, _exclusive: boolean): Promise<RoundTripsResult> => pending()

export const leasehold: JobSystemDriver = { throughput, exclusiveThroughput, hotKey, latency, roundTrips }
