/**
 * The end of an attempt (docs/behaviour.md §6, §8): its outcome written fenced on the claim token,
 * its lease released with it (and handed off to the next job waiting on it), and a lease found
 * taken over reported in one place, `reportLeaseLost`.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, Clock, Context, Effect, Either, Option } from "effect"
import { randomUUID } from "node:crypto"
import { type BackoffOptions, cutError, decideFailure } from "../../core/jobs.ts"
import type { LostLeaseDetected } from "../../core/lostLeases.ts"
import type { Finished, JobRow, LeaseTransfer, Outcome } from "../../core/model.ts"
import { JobLeases, JobStore } from "../../ports/JobStore.ts"
import type { LeaseLockApi } from "../../ports/LeaseLock.ts"
import type { HeldLease } from "../Job.ts"
import { jobRef, ProcessResult, withLeaseLost } from "./results.ts"

/** A failure as `last_error` records it: `Tag: message` for errors, else the value or the cause. */
export const describe = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const e = failure.value
    if (e instanceof Error || (typeof e === "object" && e !== null && "message" in e)) {
      const tag = (e as { _tag?: string })._tag ?? (e as Error).name
      return `${tag}: ${(e as Error).message}`
    }
    return typeof e === "string" ? e : JSON.stringify(e) ?? String(e)
  }
  return Cause.pretty(cause)
}

/** Who holds lease `name` now (null: nobody, or the lock table could not be read). */
export const holderOf = (leases: LeaseLockApi, name: string): Effect.Effect<string | null> =>
  Effect.map(
    Effect.orElseSucceed(leases.read(name), () => Option.none()),
    (row) => Option.getOrNull(Option.map(row, (r) => r.owner))
  )

/** A lease found taken over when its run ended (or timed out). */
export interface LostLease {
  /** The attempt's claimed row. */
  readonly job: JobRow
  /** The lease as the attempt took it. */
  readonly lease: Held
  /** This attempt's claim token, the lease's owner while it held it. */
  readonly token: string
  readonly holder: string | null
  readonly when: LostLeaseDetected
}

/**
 * The part of a held lease (../Job.ts `HeldLease`) that ending an attempt needs. `handOff`
 * false: the release wakes no waiter in the database, since an attempt of this worker takes the
 * lease next (./keyGate.ts). `transferTo`: an outcome write passes the lease to that attempt
 * instead of releasing it, and tells `passedOn` its new fencing token (undefined: with
 * `unlessWaiting`, it released and handed off instead, a job waiting on it in the database).
 */
export type Held = Pick<HeldLease, "name" | "fencingToken"> & {
  readonly handOff?: boolean | undefined
  readonly transferTo?: LeaseTransfer | undefined
  readonly passedOn?:
    | ((fencingToken: bigint | undefined) => Effect.Effect<void, never, JobStore | JobLeases>)
    | undefined
}

/**
 * The one place a lost lease is reported (docs/behaviour.md §8, "Lost"): a warning naming both
 * owners, a record in the lost-leases table (src/core/lostLeases.ts; a failed write is logged,
 * never the attempt's failure), and `leaseLost` on the result (which processQueue and tick
 * count, and the `leasehold_leases_lost_total` metric: ./observe.ts). The run may have
 * overlapped another; the job is still recorded as it ended.
 */
export const reportLeaseLost = (
  result: ProcessResult,
  lost: LostLease
): Effect.Effect<ProcessResult, never, JobStore> =>
  Effect.gen(function*() {
    yield* Effect.logWarning(
      `lease ${lost.lease.name} was lost before the run ${lost.when}: held by ${lost.holder ?? "nobody"}, ` +
        `not by this attempt (${lost.token}); the run may have overlapped another`
    )
    const store = yield* JobStore
    yield* Effect.ignoreLogged(store.recordLostLease({
      id: randomUUID(),
      leaseName: lost.lease.name,
      jobId: lost.job.id,
      jobName: lost.job.name,
      attempt: lost.job.attempts,
      host: lost.job.claimedBy,
      fencingToken: lost.lease.fencingToken,
      holder: lost.holder,
      lostAt: yield* Clock.currentTimeMillis,
      detected: lost.when
    }))
    return withLeaseLost(result)
  })

/**
 * Writes an attempt's outcome, fenced on its claim token, and with `lease` releases that lease
 * and hands off to the next job waiting on it (one statement on PostgreSQL). `resultOf` says
 * what the attempt reports given whether the outcome was written (false: fenced).
 */
const finishAttempt = (
  job: JobRow,
  outcome: Outcome,
  held: Held | undefined,
  resultOf: (written: boolean) => ProcessResult,
  after?: (result: ProcessResult) => Effect.Effect<ProcessResult>
): Effect.Effect<ProcessResult, SqlError, JobStore | JobLeases> =>
  // The store and the Clock read in one step: this runs once per attempt.
  Effect.withFiberRuntime((fiber) => {
    const store = Context.get(fiber.currentContext as Context.Context<JobStore>, JobStore)
    const now = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
    return Effect.flatMap(
      store.finish({
        id: job.id,
        token: job.claimToken!,
        now,
        outcome,
        lease: held?.name,
        handOff: held?.handOff,
        transferTo: held?.transferTo
      }),
      // Written, with no lease or its lease simply released: nearly every attempt, settled
      // without further steps. `after` sees the other outcomes only (a fenced or cancelled job,
      // a lease passed on, lost or in doubt).
      (finished) => {
        if (
          finished.written && (held === undefined || (held.passedOn === undefined && finished.lease === "released"))
        ) {
          return Effect.succeed(resultOf(true))
        }
        const rest = afterFinish(job, held, finished, resultOf)
        return after === undefined ? rest : Effect.flatMap(rest, after)
      }
    )
  })

/** The rest of `finishAttempt`: a lease passed on, a fenced or cancelled job, a lease lost. */
const afterFinish = (
  job: JobRow,
  held: Held | undefined,
  finished: Finished,
  resultOf: (written: boolean) => ProcessResult
) =>
  Effect.gen(function*() {
    const token = job.claimToken!
    const lease = held?.name
    // Passed on; or released and handed off instead (a job waited on it in the database).
    if (held?.passedOn !== undefined && finished.lease === "released") yield* held.passedOn(finished.transferred)
    // Nothing written: fenced, unless the job was cancelled meanwhile (its row tells).
    const result = !finished.written && (yield* cancelledMeanwhile(job))
      ? ProcessResult.Cancelled({ job: jobRef(job), leaseLost: false })
      : resultOf(finished.written)
    if (held === undefined) return result
    if (finished.lease === "unknown") {
      yield* Effect.logInfo(
        `lease ${lease}: after a lost connection it cannot be told whether the release took; it expires by itself`
      )
    }
    if (finished.lease !== "lost") return result
    return yield* reportLeaseLost(result, {
      job,
      lease: held,
      token,
      holder: yield* holderOf(yield* JobLeases, held.name),
      when: "ended"
    })
  })

/** Whether the job of a claimed row was cancelled since (an unreadable row counts as not). */
export const cancelledMeanwhile = (job: JobRow): Effect.Effect<boolean, never, JobStore> =>
  Effect.flatMap(JobStore, (store) =>
    Effect.map(
      Effect.orElseSucceed(store.claimState({ id: job.id, token: job.claimToken! }), () => "lost" as const),
      (state) => state === "cancelled"
    ))

/** The one log line of an attempt that ended because its job was cancelled (never "fenced"). */
export const logCancelled = (what: string) =>
  Effect.logInfo(`attempt cancelled: ${what}; the job stays cancelled, nothing else recorded`)

/** Records a completed attempt (fenced on its token); with `lease`, releases it in the same step. */
export const recordSuccess = (
  job: JobRow,
  lease: Held | undefined
): Effect.Effect<ProcessResult, SqlError, JobStore | JobLeases> =>
  finishAttempt(
    job,
    { _tag: "Complete" },
    lease,
    (written) =>
      written
        ? ProcessResult.Completed({ job: jobRef(job), leaseLost: false })
        : ProcessResult.Fenced({ job: jobRef(job), leaseLost: false }),
    // A completed attempt is logged with its duration where every attempt is (./observe.ts).
    (result): Effect.Effect<ProcessResult> =>
      result._tag === "Cancelled"
        ? Effect.as(logCancelled("it finished, but its job had been cancelled meanwhile"), result)
        : result._tag === "Fenced"
        ? Effect.as(
          Effect.logWarning(
            "attempt fenced: it finished, but its claim had been reaped and re-claimed; nothing recorded"
          ),
          result
        )
        : Effect.succeed(result)
  )

/**
 * Records a failed attempt: retry with backoff while retries remain, else dead; fenced on the
 * token. With `lease`, the lease is released in the same step.
 */
export const recordFailure = (job: JobRow, backoff: BackoffOptions, error: string, lease: Held | undefined) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const decision = decideFailure(job, backoff, now)
    const message = cutError(error)
    const outcome: Outcome = decision._tag === "Retry"
      ? { _tag: "Retry", runAt: decision.runAt, error: message }
      : { _tag: "Kill", error: message }
    const result = yield* finishAttempt(job, outcome, lease, (written) =>
      written
        ? ProcessResult.Failed({
          job: jobRef(job),
          error: message,
          willRetry: decision._tag === "Retry",
          retryAt: decision._tag === "Retry" ? decision.runAt : null,
          leaseLost: false
        })
        : ProcessResult.Fenced({ job: jobRef(job), leaseLost: false }))
    if (result._tag === "Cancelled") {
      yield* logCancelled(`it failed after its job had been cancelled (${message})`)
    } else if (result._tag === "Fenced") {
      yield* Effect.logWarning(
        `attempt fenced: its claim was reaped and re-claimed; its failure was not recorded (${message})`
      )
    } else {
      yield* Effect.logWarning(
        decision._tag === "Retry"
          ? `attempt failed; retrying at ${new Date(decision.runAt).toISOString()}: ${message}`
          : `attempt failed; retries used up, job is dead: ${message}`
      )
    }
    return result
  })

/**
 * Makes the best job waiting on lease `name` (never `exceptId`) due now, as of the Clock. Only a
 * hint to the waiter: a failure is logged, and the waiter's own delay still ends its wait.
 */
export const handOffNow = (name: string, exceptId?: string): Effect.Effect<void, never, JobStore> =>
  Effect.ignoreLogged(
    Effect.flatMap(
      JobStore,
      (store) => Effect.flatMap(Clock.currentTimeMillis, (now) => store.handOff(name, now, exceptId))
    )
  )

/**
 * Releases lease `name` outside an outcome write, owner-fenced on the attempt's claim token, and
 * hands off to its next waiter when it was still ours (unless `handOff` is false). True: released; false: not ours (any
 * more); undefined: the release failed (logged), and the lease will expire.
 */
export const giveBackLease = (
  job: JobRow,
  name: string,
  handOff = true
): Effect.Effect<boolean | undefined, never, JobStore | JobLeases> =>
  Effect.gen(function*() {
    const released = yield* Effect.either((yield* JobLeases).release({ name, owner: job.claimToken! }))
    if (Either.isLeft(released)) {
      yield* Effect.logWarning(`lease ${name} release failed; it will expire`, released.left)
      return undefined
    }
    if (released.right && handOff) yield* handOffNow(name)
    return released.right
  })

/**
 * A fenced or cancelled attempt writes no outcome but still gives its lease back (owner-fenced)
 * and hands off; a lease found taken over is reported lost.
 */
export const releaseFenced = (job: JobRow, held: Held, result: ProcessResult) =>
  Effect.gen(function*() {
    const name = held.name
    const leases = yield* JobLeases
    const token = job.claimToken!
    if ((yield* giveBackLease(job, name, held.handOff ?? true)) !== false) return result
    return yield* reportLeaseLost(result, {
      job,
      lease: held,
      token,
      holder: yield* holderOf(leases, name),
      when: "ended"
    })
  })

/**
 * Defers a claimed job that may not start yet until `retryAt`, waiting on `waitOn`, its attempt
 * given back (docs/behaviour.md §8): `Deferred`, or `Cancelled` / `Fenced` when its claim was
 * cancelled or taken back meanwhile.
 */
export const deferClaimed = (
  job: JobRow,
  now: number,
  retryAt: number,
  waitOn: string,
  holder: string | null
): Effect.Effect<ProcessResult, SqlError, JobStore> =>
  Effect.gen(function*() {
    if (yield* (yield* JobStore).defer(job.id, job.claimToken!, now, retryAt, waitOn)) {
      return ProcessResult.Deferred({ job: jobRef(job), leaseName: waitOn, retryAt, holder })
    }
    if (yield* cancelledMeanwhile(job)) {
      yield* logCancelled("its job was cancelled before it started; not run")
      return ProcessResult.Cancelled({ job: jobRef(job), leaseLost: false })
    }
    return ProcessResult.Fenced({ job: jobRef(job), leaseLost: false })
  })
