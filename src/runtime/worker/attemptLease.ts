/**
 * The lease an attempt runs under (docs/behaviour.md §8): the one its claim took (renewed first
 * when no longer fresh), or one passed to it by this worker's previous run of its key
 * (./keyGate.ts), or a slot taken from the database (./takeLease.ts); every slot busy, the job is
 * deferred and perform does not run.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Either } from "effect"
import { isClaimLeaseFresh, leaseExpiresAt } from "../../core/lease.ts"
import type { JobLeases, JobStore } from "../../ports/JobStore.ts"
import type { AnyJobType, HeldLease } from "../Job.ts"
import { annotateAttempt } from "../tracing.ts"
import type { Attempt, Steps } from "./attemptState.ts"
import { checkClaim, giveBack, RECHECK_AFTER_MS } from "./claimCheck.ts"
import type { Turn } from "./keyGate.ts"
import { deferClaimed, giveBackLease, handOffNow } from "./outcome.ts"
import type { ProcessResult } from "./results.ts"
import { takeLease } from "./takeLease.ts"

/**
 * A lease the claim took that is no longer fresh (src/core/lease.ts isClaimLeaseFresh: the job
 * waited, or this process was paused), renewed from `now`, owner-fenced, before the attempt uses
 * it. Undefined when it was taken over meanwhile: the attempt then takes its lease as if the
 * claim had not.
 */
export const renewClaimed = (
  claimed: HeldLease,
  token: string,
  claimTimeout: number | null,
  now: number,
  leases: JobLeases["Type"]
): Effect.Effect<HeldLease | undefined> => {
  const expiresAt = leaseExpiresAt(now, claimTimeout)
  return Effect.map(
    Effect.orElseSucceed(leases.renew({ name: claimed.name, owner: token, now, expiresAt }), () => false),
    (renewed) => (renewed ? { ...claimed, expiresAt } : undefined)
  )
}

/**
 * The lease the attempt runs under for `leaseName` (none when undefined), or (left) the attempt's
 * result when it ends here (its job deferred, cancelled or taken back meanwhile, or the lease
 * could not be taken). A lease the claim took under another name (the job type's lease changed
 * since the enqueue) is given back first. Held, the lease counts as this worker's key
 * (./keyGate.ts) until the attempt leaves it.
 */
export function* holdLease(
  a: Attempt,
  leaseName: string | undefined,
  type: AnyJobType
): Steps<Either.Either<HeldLease | undefined, ProcessResult>, SqlError, JobStore | JobLeases> {
  const { claimed, gate, job, token } = a
  if (claimed !== undefined && claimed.name !== leaseName) {
    // The job type's lease changed since the enqueue (another version of the app): the lease
    // taken is not this attempt's; give it back (to its next waiter) and take the right one.
    yield* Effect.logDebug(`claim took lease ${claimed.name}, not ${leaseName ?? "none"}; released`)
    yield* giveBack(job, claimed)
  }
  if (leaseName === undefined) return Either.right(undefined)
  if (a.tracing) {
    yield* annotateAttempt("leasehold.lease.name", leaseName)
  }
  // A lease the claim took is used as it is when taken at most a second ago, else renewed
  // first. The Clock read in place: a fresh lease, nearly every one, costs no step.
  const now = a.clock.unsafeCurrentTimeMillis()
  let held = claimed?.name !== leaseName
    ? undefined
    : isClaimLeaseFresh(claimed.expiresAt, now, job.claimTimeout)
    ? claimed
    : yield* renewClaimed(claimed, token, job.claimTimeout, now, a.leases)
  if (held === undefined) {
    // A lease its claim took that could not be renewed (taken over, or the renewal failed):
    // the attempt asks the database itself, where its own lease is found as ours.
    const asked = yield* askForLease(a, leaseName, type, claimed?.name === leaseName)
    if (Either.isLeft(asked)) return asked
    held = asked.right
  }
  if (gate !== undefined) {
    gate.enter(leaseName, token, held.expiresAt)
    // Off the start's path: the next job of a busy key is claimed while this one runs.
    if (gate.wakeNext(leaseName)) {
      yield* Effect.fork(handOffNow(leaseName))
    }
  }
  if (a.tracing) {
    yield* annotateAttempt("leasehold.lease.fencing_token", String(held.fencingToken))
  }
  return Either.right(held)
}

/**
 * The lease `leaseName` for an attempt that does not hold it from its claim: first its turn at
 * this worker's key gate (./keyGate.ts; skipped without a gate, or when the claim took the lease
 * and only its renewal failed); then the lease the previous run passed to it, or a slot taken
 * from the database, or the job deferred. A job that waited its turn long enough is read again
 * first (`RECHECK_AFTER_MS`).
 */
function* askForLease(
  a: Attempt,
  leaseName: string,
  type: AnyJobType,
  claimedThis: boolean
): Steps<Either.Either<HeldLease, ProcessResult>, SqlError, JobStore | JobLeases> {
  const { gate, job, token } = a
  const turn: Turn = gate === undefined || claimedThis
    ? { _tag: "Open" }
    : yield* gate.turn(leaseName, type.concurrencyLimit, token, job)
  // The lease the run before passed to this attempt as it finished (./keyGate.ts).
  const passed = turn._tag === "Waited" ? turn.lease : undefined
  if (turn._tag === "Waited") {
    yield* Effect.logDebug(`waited ${turn.ms} ms for this worker's run of ${leaseName} to end`)
    if (turn.ms >= RECHECK_AFTER_MS) {
      const stop = yield* checkClaim(a)
      if (stop !== undefined) {
        if (passed !== undefined) {
          yield* giveBackLease(job, passed.name)
        }
        return Either.left(stop)
      }
    }
  }
  if (passed !== undefined) {
    return Either.right({
      name: passed.name,
      owner: token,
      expiresAt: passed.expiresAt,
      fencingToken: passed.fencingToken
    })
  }
  return yield* takeLease(
    job,
    leaseName,
    type.concurrencyLimit,
    type.backoff,
    a.o,
    turn._tag === "Busy" ? turn : undefined,
    turn._tag === "Waited" && turn.inLine
  )
}

/**
 * The lease as perform starts with it: used as it is when taken or renewed within the last
 * second (src/core/lease.ts isClaimLeaseFresh), else renewed from now first, owner-fenced. A
 * lease that ran out and was taken over meanwhile (this process paused between taking it and
 * starting perform) is not run under: the attempt ends before perform (left), its job due again
 * at once, so two runs never start on one slot, however long the pause.
 */
export function* freshAtStart(
  a: Attempt,
  held: HeldLease,
  leaseName: string
): Steps<Either.Either<HeldLease, ProcessResult>, SqlError, JobStore | JobLeases> {
  const now = a.clock.unsafeCurrentTimeMillis()
  if (isClaimLeaseFresh(held.expiresAt, now, a.job.claimTimeout)) return Either.right(held)
  const renewed = yield* renewClaimed(held, a.token, a.job.claimTimeout, now, a.leases)
  if (renewed !== undefined) return Either.right(renewed)
  yield* Effect.logWarning(
    `lease ${held.name} ran out and was taken over before perform started (was this process paused?); not run`
  )
  return Either.left(yield* deferClaimed(a.job, now, now, leaseName, null))
}
