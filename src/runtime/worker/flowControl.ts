/**
 * An attempt's flow control besides its key's lease (docs/flow-control.md): the limits it runs
 * under (its type's declaration, overridden or paused live: ./liveLimits.ts), and, once its
 * key's lease is held, the type's cap, the slots of a lowered limit and the rate limit, always
 * in that order (./typeCap.ts, ./lowered.ts, ./rateLimit.ts). Each may end the attempt with its
 * job deferred, everything it took given back.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Either } from "effect"
import { capLeaseName } from "../../core/lease.ts"
import { effectiveLimits, type LimitIndex, noLimits, PAUSED_RECHECK_MS, pausedWaitName } from "../../core/limits.ts"
import type { JobLeases, JobStore } from "../../ports/JobStore.ts"
import type { AnyJobType, HeldLease } from "../Job.ts"
import type { Attempt, Steps } from "./attemptState.ts"
import { giveBack } from "./claimCheck.ts"
import { limitsSnapshot, liveLimits } from "./liveLimits.ts"
import { waitForLowered } from "./lowered.ts"
import { deferClaimed } from "./outcome.ts"
import { type RateHold, takeRate } from "./rateLimit.ts"
import type { ProcessResult } from "./results.ts"
import { slotNames } from "./slots.ts"
import { type CapSlot, giveBackCap, takeCap } from "./typeCap.ts"

/**
 * The job type as this attempt runs it: its declaration with the live overrides of its type,
 * queue and key (right), or, paused, the attempt's result (left): the job pending again, its
 * attempt given back, waiting on the pause until it is lifted (which wakes it) or for five minutes.
 */
export function* limitedType(
  a: Attempt,
  type: AnyJobType,
  leaseName: string | undefined
): Steps<Either.Either<AnyJobType, ProcessResult>, SqlError, JobStore | JobLeases> {
  const now = a.clock.unsafeCurrentTimeMillis()
  // A long-running worker's attempt (it has a key gate) goes by the rows it has and reads them
  // again behind itself, so it never waits for a read while another attempt of its key overtakes
  // it (the worker read them as it started). Any other attempt waits for rows a second old.
  const snapshot = limitsSnapshot(a.store, now)
  let index: LimitIndex
  if (snapshot !== undefined && (!snapshot.stale || a.gate !== undefined)) {
    index = snapshot.index
    if (snapshot.stale) yield* Effect.forkDaemon(liveLimits(a.store, now))
  } else {
    index = yield* liveLimits(a.store, now)
  }
  if (noLimits(index)) return Either.right(type)
  let limits = effectiveLimits(index, type, a.job.queue, leaseName)
  if (limits.pausedBy !== undefined) {
    // Paused by rows up to a second old: read them again before holding the job, so a pause just
    // lifted (which made this job due) does not send it back to wait.
    index = yield* liveLimits(a.store, now, true)
    limits = effectiveLimits(index, type, a.job.queue, leaseName)
  }
  const paused = limits.pausedBy
  if (paused !== undefined) {
    if (a.claimed !== undefined) yield* giveBack(a.job, a.claimed)
    const waitOn = pausedWaitName(paused.scope, paused.target)
    yield* Effect.logDebug(`${paused.scope} ${paused.target} is paused; the job waits`)
    return Either.left(yield* deferClaimed(a.job, now, now + PAUSED_RECHECK_MS, waitOn, paused.pausedBy))
  }
  return Either.right({
    ...type,
    concurrencyLimit: limits.concurrencyLimit,
    typeConcurrencyLimit: limits.typeConcurrencyLimit,
    rateLimit: limits.rateLimit
  })
}

/** What an admitted attempt holds besides its key's lease: a cap slot and a rate slot, if limited so. */
export interface Admitted {
  readonly cap: CapSlot | undefined
  readonly rate: RateHold | undefined
}

/**
 * Once the key's lease (`held`, if any) is taken: its slots above a lowered limit free, a slot of
 * the type's cap taken, the cap's slots above a lowered cap free, a rate slot taken. Right: the
 * cap slot held (if any), perform may start. Left: the attempt's result, everything taken given
 * back. `type` is the type as limited live, `declared` as the app declares it.
 */
export function* admit(
  a: Attempt,
  type: AnyJobType,
  declared: AnyJobType,
  leaseName: string | undefined,
  held: HeldLease | undefined
): Steps<Either.Either<Admitted, ProcessResult>, SqlError, JobStore | JobLeases> {
  const job = a.job
  const backOff = held === undefined ? Effect.void : giveBack(job, held)
  if (leaseName !== undefined && type.concurrencyLimit < declared.concurrencyLimit) {
    const above = slotNames(leaseName, declared.concurrencyLimit).slice(type.concurrencyLimit)
    const clear = yield* waitForLowered(a, above, leaseName, backOff)
    if (Either.isLeft(clear)) return Either.left(clear.left)
  }
  let cap: CapSlot | undefined
  if (type.typeConcurrencyLimit !== undefined) {
    const capped = yield* takeCap(a, type.typeConcurrencyLimit, type.backoff, held)
    if (Either.isLeft(capped)) return Either.left(capped.left)
    cap = capped.right
    const declaredCap = declared.typeConcurrencyLimit ?? 0
    if (type.typeConcurrencyLimit < declaredCap) {
      const name = capLeaseName(job.name)
      const above = slotNames(name, declaredCap).slice(type.typeConcurrencyLimit)
      const clear = yield* waitForLowered(a, above, name, Effect.zipRight(giveBackCap(a, cap), backOff))
      if (Either.isLeft(clear)) return Either.left(clear.left)
    }
  }
  let rate: RateHold | undefined
  if (type.rateLimit !== undefined) {
    const rated = yield* takeRate(a, job.name, leaseName, type.rateLimit, type.backoff, held)
    if (Either.isLeft(rated)) {
      if (cap !== undefined) yield* giveBackCap(a, cap)
      return Either.left(rated.left)
    }
    rate = rated.right
  }
  return Either.right({ cap, rate })
}
