/**
 * What every finished attempt reports beyond its result, in one place for every entry point
 * (processNext, processQueue, tick and the long-running worker): its outcome and duration in the
 * metrics (src/runtime/metrics.ts), and one log line at info.
 */
import { Clock, Context, Effect, type Fiber, FiberRef, LogLevel } from "effect"
import type { JobRow } from "../../core/model.ts"
import { recordAttempt } from "../metrics.ts"
import type { ProcessResult } from "./results.ts"

/** What the finished-attempt line's `outcome` says happened, in lower case like every outcome. */
const outcomeOf = (result: ProcessResult): string => {
  switch (result._tag) {
    case "Completed":
      return "completed"
    case "Failed":
      return result.willRetry ? "failed, will retry" : "failed, dead"
    case "Fenced":
      return "fenced"
    case "Deferred":
      return result.leaseName.startsWith("rate:")
        ? "deferred, rate limited"
        : result.leaseName.startsWith("cap:")
        ? "deferred, type cap reached"
        : "deferred, lease busy"
    default:
      return result._tag.toLowerCase()
  }
}

/**
 * The line itself: how long the attempt ran, and for a retry when it comes (the retry's delay is
 * not the attempt's duration, and a line that put them side by side read as one).
 */
const lineOf = (result: ProcessResult, outcome: string, ms: number): string => {
  if (result._tag === "Failed") {
    const next = result.willRetry && result.retryAt !== null
      ? `; retrying at ${new Date(result.retryAt).toISOString()}`
      : result.willRetry
      ? "; it will be retried"
      : "; no retries left, the job is dead"
    return `attempt failed after ${ms} ms${next}`
  }
  return `attempt ${outcome} in ${ms} ms`
}

/**
 * Runs one attempt of `job` in `fiber` (the fiber it runs in), then records how it ended and how
 * long it took, and logs it. The Clock and the log level are read off the fiber in place, not
 * as effects, which would be steps of every attempt's. The line is built only when info is
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
    const ended = clock.unsafeCurrentTimeMillis()
    const ms = ended - started
    recordAttempt(result, ms, ended)
    if (LogLevel.greaterThan(fiber.getFiberRef(FiberRef.currentMinimumLogLevel), LogLevel.Info)) {
      return Effect.succeed(result)
    }
    const outcome = outcomeOf(result)
    const lost = "leaseLost" in result && result.leaseLost
    return Effect.as(
      Effect.logInfo(`${lineOf(result, outcome, ms)}${lost ? " (its lease was lost)" : ""}`).pipe(
        Effect.annotateLogs({ queue: job.queue, outcome, durationMs: ms })
      ),
      result
    )
  })
}
