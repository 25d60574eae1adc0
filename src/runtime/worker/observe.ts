/**
 * What every finished attempt reports beyond its result, in one place for every entry point
 * (processNext, processQueue, tick and the long-running worker): its outcome and duration in the
 * metrics (src/runtime/metrics.ts), and one log line at info.
 */
import { Effect, FiberRef, LogLevel } from "effect"
import type { JobRow } from "../../core/model.ts"
import { recordAttempt } from "../metrics.ts"
import type { ProcessResult } from "./results.ts"

/** What the finished-attempt line says happened. */
const outcomeOf = (result: ProcessResult): string => {
  switch (result._tag) {
    case "Completed":
      return "completed"
    case "Failed":
      return result.willRetry ? "failed, will retry" : "failed, dead"
    case "Fenced":
      return "fenced"
    case "Deferred":
      return "deferred, lease busy"
    default:
      return result._tag
  }
}

// The line is built only when info is logged at all: a worker quieted to warnings pays a
// FiberRef read per attempt, not a message and its annotations.
const logFinished = (result: ProcessResult, ms: number, queue: string) =>
  FiberRef.getWith(FiberRef.currentMinimumLogLevel, (minimum) => {
    if (LogLevel.greaterThan(minimum, LogLevel.Info)) return Effect.void
    const outcome = outcomeOf(result)
    const lost = "leaseLost" in result && result.leaseLost
    return Effect.logInfo(`attempt ${outcome} in ${ms} ms${lost ? " (its lease was lost)" : ""}`).pipe(
      Effect.annotateLogs({ queue, outcome, durationMs: ms })
    )
  })

/** Runs one attempt of `job`, then records how it ended and how long it took, and logs it. */
export const observeAttempt = <E, R>(
  job: JobRow,
  attempt: Effect.Effect<ProcessResult, E, R>
): Effect.Effect<ProcessResult, E, R> =>
  // The Clock read in place (two steps fewer per attempt than two reads as effects).
  Effect.clockWith((clock) => {
    const started = clock.unsafeCurrentTimeMillis()
    return Effect.tap(attempt, (result) => {
      const ms = clock.unsafeCurrentTimeMillis() - started
      recordAttempt(result, ms)
      return logFinished(result, ms, job.queue)
    })
  })
