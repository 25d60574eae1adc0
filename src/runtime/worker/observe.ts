/**
 * What every finished attempt reports beyond its result, in one place for every entry point
 * (processNext, processQueue, tick and the long-running worker): its outcome and duration in the
 * metrics (src/runtime/metrics.ts), and one log line at info.
 */
import { Clock, Context, Effect, type Fiber, FiberRef, LogLevel } from "effect"
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

/**
 * Runs one attempt of `job` in `fiber` (the fiber it runs in), then records how it ended and how
 * long it took, and logs it. The Clock and the log level are read off the fiber in place: as
 * effects they were five of an attempt's steps (issue 13). The line is built only when info is
 * logged at all.
 */
export const observeAttempt = <E, R>(
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  job: JobRow,
  attempt: Effect.Effect<ProcessResult, E, R>
): Effect.Effect<ProcessResult, E, R> => {
  const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
  const started = clock.unsafeCurrentTimeMillis()
  return Effect.flatMap(attempt, (result) => {
    const ms = clock.unsafeCurrentTimeMillis() - started
    recordAttempt(result, ms)
    if (LogLevel.greaterThan(fiber.getFiberRef(FiberRef.currentMinimumLogLevel), LogLevel.Info)) {
      return Effect.succeed(result)
    }
    const outcome = outcomeOf(result)
    const lost = "leaseLost" in result && result.leaseLost
    return Effect.as(
      Effect.logInfo(`attempt ${outcome} in ${ms} ms${lost ? " (its lease was lost)" : ""}`).pipe(
        Effect.annotateLogs({ queue: job.queue, outcome, durationMs: ms })
      ),
      result
    )
  })
}
