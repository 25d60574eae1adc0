/**
 * The worker (docs/behaviour.md §5–§9): reap, claim, run one attempt (with its lease), and record
 * what happened. processNext is one turn; processQueue and tick loop it; `make` / `layer` run a
 * long-running worker.
 *
 * An attempt: claim → [lease: take it, or defer the job if busy] → perform under its timeout →
 * record completed / retry / dead (fenced on the claim token) → [release the lease and hand off
 * to the next job waiting on it].
 *
 * This module is the public face; the parts live in ./worker/ (docs/architecture.md lists them):
 * options.ts (checked once per entry point), results.ts, attempt.ts and the parts of an attempt,
 * turns.ts, hosts.ts, doorbell.ts, and longRunning.ts with the components of a long-running
 * worker.
 */

/** Options of the entry points. */
export type { DrainOptions, ProcessOptions, ProcessQueueOptions, TickOptions, WorkerConfig } from "./worker/options.ts"
/** What the entry points report. */
export { type JobRef, ProcessResult, tallyOf, type TickResult } from "./worker/results.ts"
/** The services an attempt needs. */
export type { WorkerServices } from "./worker/attempt.ts"
/** One turn, a loop of turns, one scheduled run, and the reaper on its own. */
export { claimAndRun, processNext, processQueue, reap, tick } from "./worker/turns.ts"
/** Draining and resuming a host. */
export { drain, resume } from "./worker/hosts.ts"
/** Retention: the worker's `retention` option, and one pass on demand (./worker/maintenance.ts). */
export { type RetentionConfig, type RetentionTally, runRetention } from "./worker/maintenance.ts"
/** The long-running worker. */
export { layer, make, type WorkerApi, WorkerHandle, type WorkerStats } from "./worker/longRunning.ts"
