/**
 * What a running long-running worker reports (`WorkerApi.stats`, ./longRunning.ts), kept as
 * plain counters that its components update and `stats` reads only when asked.
 */
import { emptyTally, type QueueTally } from "../../core/jobs.ts"
import { addRunning } from "../metrics.ts"

/** What a running worker reports (`skipped` counts deferrals on busy leases). */
export interface WorkerStats extends QueueTally {
  readonly host: string
  readonly running: number
  readonly reaped: number
  /** Wake-ups by notification (PostgreSQL LISTEN/NOTIFY) rather than by polling. */
  readonly notified: number
}

/**
 * The worker's counters: updated on every attempt, read only when asked (wake-ups by
 * notification are counted from the listener's callback, outside any fiber).
 */
export interface Counters {
  /** Outcomes so far (./results.ts `tallyOf`). */
  tally: QueueTally
  /** Attempts running in this process (claimed jobs waiting in the buffer are not counted). */
  running: number
  reaped: number
  notified: number
}

/** Counters at zero. */
export const makeCounters = (): Counters => ({ tally: emptyTally, running: 0, reaped: 0, notified: 0 })

/** Counts `delta` attempts more (or fewer) running, here and in the metrics (../metrics.ts). */
export const addRunningTo = (counters: Counters, delta: number): void => {
  addRunning(delta)
  counters.running += delta
}

/** The counters as `stats` reports them for the worker on `host`. */
export const statsOf = (counters: Counters, host: string): WorkerStats => ({
  ...counters.tally,
  host,
  running: counters.running,
  reaped: counters.reaped,
  notified: counters.notified
})
