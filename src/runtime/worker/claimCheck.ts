/**
 * An attempt's claim before perform (docs/behaviour.md §15): read again after the job waited, so
 * a job cancelled (or taken back) meanwhile does not run, and the lease its claim took given back
 * on every way out before perform.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import type { JobRow } from "../../core/model.ts"
import type { JobLeases, JobStore } from "../../ports/JobStore.ts"
import type { HeldLease } from "../Job.ts"
import type { Attempt } from "./attemptState.ts"
import { giveBackLease, logCancelled } from "./outcome.ts"
import { jobRef, ProcessResult } from "./results.ts"

/**
 * A claimed job that waited at least this long (by the Clock) since its claim, in a long-running
 * worker's buffer or for its key (./keyGate.ts), is read again before it starts, and not run if
 * it was cancelled meanwhile (docs/behaviour.md §15). One that waited less starts at once: a
 * cancel that soon after the claim is no different from one just after the start, which
 * perform's next heartbeat or the outcome write notices. A busy worker's jobs wait only briefly,
 * so they skip the read, which would otherwise be a large share of a busy drain's statements.
 */
export const RECHECK_AFTER_MS = 50

/** Gives back a lease the attempt holds but will not use, quietly (its release's result ignored). */
export const giveBack = (job: JobRow, lease: HeldLease): Effect.Effect<void, never, JobStore | JobLeases> =>
  Effect.asVoid(giveBackLease(job, lease.name))

/** Ends an attempt before perform with `result`, giving back the lease its claim took, if any. */
export const notRun = (
  a: Attempt,
  result: ProcessResult
): Effect.Effect<ProcessResult, never, JobStore | JobLeases> =>
  a.claimed === undefined ? Effect.succeed(result) : Effect.as(giveBack(a.job, a.claimed), result)

/**
 * Reads the claim again: undefined when it is still this attempt's and the job not cancelled;
 * else the attempt's result, its job not run (`Cancelled`, or `Fenced` when the claim was taken
 * back).
 */
export const checkClaim = (
  a: Attempt
): Effect.Effect<ProcessResult | undefined, SqlError, JobStore | JobLeases> =>
  Effect.gen(function*() {
    const claimed = a.claimed
    const state = yield* Effect.onError(
      a.store.claimState({ id: a.job.id, token: a.token }),
      () => claimed === undefined ? Effect.void : giveBack(a.job, claimed)
    )
    if (state === "cancelled") {
      yield* logCancelled("its job was cancelled before it started; not run")
      return yield* notRun(a, ProcessResult.Cancelled({ job: jobRef(a.job), leaseLost: false }))
    }
    if (state === "lost") {
      yield* Effect.logWarning("attempt fenced: its claim was taken back before it started; not run")
      return yield* notRun(a, ProcessResult.Fenced({ job: jobRef(a.job), leaseLost: false }))
    }
    return undefined
  })
