/**
 * What the worker's entry points report (docs/behaviour.md §9): one attempt's `ProcessResult`,
 * and the tallies processQueue, tick and the long-running worker add them up into. A deferral
 * counts as skipped (or deferred), never as failed.
 */
import { Data } from "effect"
import { type QueueTally, withError } from "../../core/jobs.ts"
import type { JobRow } from "../../core/model.ts"

/** The job an outcome is about. */
export interface JobRef {
  readonly id: string
  readonly name: string
  readonly queue: string
  /** The run number this attempt was (1 for the first). */
  readonly attempt: number
}

/**
 * What one processNext did. Switch on `_tag`:
 * - `Idle`: nothing was due.
 * - `Completed`: perform succeeded and the row says completed. `leaseLost`: its lease had been
 *   taken over by the time it finished (the run may have overlapped another; it is reported).
 * - `Failed`: perform failed (or timed out, or its payload or type was bad); `willRetry` with
 *   `retryAt`, or dead.
 * - `Fenced`: the attempt's claim had been reaped and re-claimed; nothing was recorded.
 * - `Cancelled`: the job was cancelled (src/runtime/cancel.ts) before the attempt started or
 *   while it ran; perform was stopped (or never run) and nothing else was recorded.
 * - `Deferred`: its lease was busy; the job waits until `retryAt` with its attempt given back.
 * - `Capped`: this host is at its cap. `Draining`: this host is draining and starts nothing.
 */
export type ProcessResult = Data.TaggedEnum<{
  Idle: {}
  Completed: { readonly job: JobRef; readonly leaseLost: boolean }
  Failed: {
    readonly job: JobRef
    readonly error: string
    readonly willRetry: boolean
    readonly retryAt: number | null
    readonly leaseLost: boolean
  }
  Fenced: { readonly job: JobRef; readonly leaseLost: boolean }
  Cancelled: { readonly job: JobRef; readonly leaseLost: boolean }
  Deferred: {
    readonly job: JobRef
    readonly leaseName: string
    readonly retryAt: number
    readonly holder: string | null
  }
  Capped: { readonly running: number }
  Draining: { readonly until: number | null }
}>

/** Constructors and matchers of `ProcessResult`. */
export const ProcessResult = Data.taggedEnum<ProcessResult>()

/** The `JobRef` of a claimed row. */
export const jobRef = (job: JobRow): JobRef => ({ id: job.id, name: job.name, queue: job.queue, attempt: job.attempts })

/** `result` marked as having lost its lease (only outcomes of a run that held one carry the flag). */
export const withLeaseLost = (result: ProcessResult): ProcessResult =>
  result._tag === "Completed" || result._tag === "Failed" || result._tag === "Fenced" || result._tag === "Cancelled"
    ? { ...result, leaseLost: true }
    : result

const lostCount = (r: ProcessResult): number => ("leaseLost" in r && r.leaseLost ? 1 : 0)

/** Adds one outcome to a tally. */
export const tallyOf = (t: QueueTally, r: ProcessResult): QueueTally => {
  switch (r._tag) {
    case "Completed":
      return { ...t, processed: t.processed + 1, leasesLost: t.leasesLost + lostCount(r) }
    case "Failed":
      return {
        ...t,
        failed: t.failed + 1,
        leasesLost: t.leasesLost + lostCount(r),
        errors: withError(t.errors, r.error)
      }
    case "Fenced":
      return { ...t, fenced: t.fenced + 1, leasesLost: t.leasesLost + lostCount(r) }
    case "Cancelled":
      return { ...t, cancelled: t.cancelled + 1, leasesLost: t.leasesLost + lostCount(r) }
    case "Deferred":
      return { ...t, skipped: t.skipped + 1 }
    default:
      return t
  }
}

/** What tick did. A deferral is never counted as a failure. */
export interface TickResult {
  readonly host: string
  readonly processed: number
  readonly failed: number
  readonly fenced: number
  readonly cancelled: number
  readonly deferred: number
  readonly leasesLost: number
  readonly reaped: number
  /** Jobs it enqueued for recurring jobs' due slots (`Schedules.enqueueDue`). */
  readonly scheduled: number
  readonly capped: boolean
  readonly draining: boolean
}

/** A tick that has run nothing yet. */
export const emptyTick = (host: string, reaped: number): TickResult => ({
  host,
  processed: 0,
  failed: 0,
  fenced: 0,
  cancelled: 0,
  deferred: 0,
  leasesLost: 0,
  reaped,
  scheduled: 0,
  capped: false,
  draining: false
})

/** Adds one attempt's outcome to a tick's result (`Capped` sets `capped`; the others count). */
export const tickOf = (t: TickResult, r: ProcessResult): TickResult => {
  switch (r._tag) {
    case "Completed":
      return { ...t, processed: t.processed + 1, leasesLost: t.leasesLost + lostCount(r) }
    case "Failed":
      return { ...t, failed: t.failed + 1, leasesLost: t.leasesLost + lostCount(r) }
    case "Fenced":
      return { ...t, fenced: t.fenced + 1, leasesLost: t.leasesLost + lostCount(r) }
    case "Cancelled":
      return { ...t, cancelled: t.cancelled + 1, leasesLost: t.leasesLost + lostCount(r) }
    case "Deferred":
      return { ...t, deferred: t.deferred + 1 }
    case "Capped":
      return { ...t, capped: true }
    default:
      return t
  }
}
