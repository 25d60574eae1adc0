/**
 * What every finished attempt reports beyond its result, in one place for every entry point
 * (processNext, processQueue, tick and the long-running worker): its outcome and duration in the
 * metrics (src/runtime/metrics.ts).
 */
import { Clock, Effect } from "effect"
import type { JobRow } from "../../core/model.ts"
import { recordAttempt } from "../metrics.ts"
import type { ProcessResult } from "./results.ts"

/** Runs one attempt of `job` and records how it ended and how long it took. */
export const observeAttempt = <E, R>(
  _job: JobRow,
  attempt: Effect.Effect<ProcessResult, E, R>
): Effect.Effect<ProcessResult, E, R> =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (started) =>
      Effect.tap(attempt, (result) =>
        Effect.map(Clock.currentTimeMillis, (ended) => recordAttempt(result, ended - started)))
  )
