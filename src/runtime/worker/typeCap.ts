/**
 * A job type's cap over all its keys (`typeConcurrencyLimit`: docs/flow-control.md,
 * docs/behaviour.md §18): M lease slots named after the type (src/core/lease.ts `capLeaseName`),
 * one held by each of the type's running attempts, taken after the key's lease (always in that
 * order) and released after the outcome is written, handing off to the jobs waiting on the cap.
 * Every slot busy, perform does not run: the key's lease is given back and the job waits, its
 * attempt given back, like a job whose key is busy.
 *
 * Slots are ordinary leases owned by the claim token, so a stopping worker's hand-back releases
 * them with the key's, a crashed worker's expire with its lease window, and a heartbeat renews
 * them. The slots this process's attempts hold are skipped when looking for a free one, and the
 * look starts after the last slot taken here, so below the cap a take is one statement.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, Effect, Either, Exit, Option } from "effect"
import { JobTimeoutError } from "../../core/errors.ts"
import type { BackoffOptions } from "../../core/jobs.ts"
import { busyDelaySeconds, capLeaseName, leaseExpiresAt } from "../../core/lease.ts"
import type { JobLeases, JobStore } from "../../ports/JobStore.ts"
import type { HeldLease } from "../Job.ts"
import type { Attempt, Steps } from "./attemptState.ts"
import { giveBack } from "./claimCheck.ts"
import { deferClaimed, describe, giveBackLease, handOffNow, recordFailure, reportLeaseLost } from "./outcome.ts"
import type { ProcessResult } from "./results.ts"
import { anySlotFree, firstToFree, slotNames } from "./slots.ts"

/** A cap slot an attempt holds. */
export interface CapSlot {
  /** The cap's own name, which its waiters wait on. */
  readonly cap: string
  /** The slot's lease name. */
  readonly name: string
  readonly fencingToken: bigint
  readonly index: number
}

// Per store (its lease service) and cap: the slots this process's attempts hold, each until its
// lease would expire (an attempt that never released it, its finish failing, is forgotten then),
// and where the next look starts.
interface Local {
  readonly held: Map<number, number>
  next: number
}
const locals = new WeakMap<object, Map<string, Local>>()

const localFor = (leases: object, cap: string): Local => {
  let byCap = locals.get(leases)
  if (byCap === undefined) locals.set(leases, byCap = new Map())
  let local = byCap.get(cap)
  if (local === undefined) byCap.set(cap, local = { held: new Map(), next: 0 })
  return local
}

/**
 * Takes a slot of the type's cap of `limit` (right), or ends the attempt (left): every slot
 * busy, the job deferred until the first holder's lease should end, waiting on the cap, with its
 * attempt and `held` (the key's lease) given back; or the lock table's failure recorded as the
 * attempt's.
 */
export function* takeCap(
  a: Attempt,
  limit: number,
  backoff: BackoffOptions,
  held: HeldLease | undefined
): Steps<Either.Either<CapSlot, ProcessResult>, SqlError, JobStore | JobLeases> {
  const { job, leases, token } = a
  const cap = capLeaseName(job.name)
  const names = slotNames(cap, limit)
  const local = localFor(leases, cap)
  const now = a.clock.unsafeCurrentTimeMillis()
  const expiresAt = leaseExpiresAt(now, job.claimTimeout)
  const taken = yield* Effect.either(Effect.gen(function*() {
    yield* leases.ensureTable
    for (let step = 0; step < limit; step++) {
      const index = (local.next + step) % limit
      if ((local.held.get(index) ?? -Infinity) > now) continue
      // Marked before the round trip, so this process's other attempts look elsewhere.
      local.held.set(index, expiresAt)
      const fencingToken = yield* Effect.onError(
        leases.tryAcquireToken({ name: names[index]!, owner: token, host: a.o.host, now, expiresAt }),
        () => Effect.sync(() => local.held.delete(index))
      )
      if (Option.isSome(fencingToken)) {
        local.next = (index + 1) % limit
        return Option.some<CapSlot>({ cap, name: names[index]!, fencingToken: fencingToken.value, index })
      }
      local.held.delete(index)
    }
    return Option.none<CapSlot>()
  }))
  if (Either.isLeft(taken)) {
    return Either.left(yield* recordFailure(job, backoff, describe(Cause.fail(taken.left)), held))
  }
  if (Option.isSome(taken.right)) return Either.right(taken.right.value)
  const first = Option.getOrUndefined(yield* firstToFree(leases, names))
  if (held !== undefined) yield* giveBack(job, held)
  const delay = busyDelaySeconds(first?.expiresAt, now)
  const retryAt = now + delay * 1000
  const result = yield* deferClaimed(job, now, retryAt, cap, first?.owner ?? null)
  if (result._tag !== "Deferred") return Either.left(result)
  // A slot released between the look and the deferral handed off to nobody: wake a waiter now.
  if (yield* Effect.orElseSucceed(anySlotFree(leases, names, a.clock.unsafeCurrentTimeMillis()), () => false)) {
    yield* handOffNow(cap)
  }
  yield* Effect.logDebug(`type cap ${cap} reached (${limit} running); deferred ${delay} s`)
  return Either.left(result)
}

/**
 * Gives a cap slot back before perform ran (the attempt ended early): owner-fenced, handing off
 * to the cap's waiters.
 */
export const giveBackCap = (a: Attempt, slot: CapSlot): Effect.Effect<void, never, JobStore | JobLeases> =>
  Effect.gen(function*() {
    localFor(a.leases, slot.cap).held.delete(slot.index)
    if (yield* giveBackLease(a.job, slot.name, false)) yield* handOffNow(slot.cap)
  })

/**
 * Releases the attempt's cap slot once its outcome is written, handing off to the jobs waiting on
 * the cap; a slot found taken over is reported lost, as a key's lease is. After a timeout perform
 * may still run: the slot is left to expire, and reported if it was already taken over.
 */
export const releaseCap = (
  a: Attempt,
  slot: CapSlot,
  exit: Exit.Exit<unknown, unknown>,
  result: ProcessResult
): Effect.Effect<ProcessResult, never, JobStore | JobLeases> =>
  Effect.gen(function*() {
    localFor(a.leases, slot.cap).held.delete(slot.index)
    if (result._tag === "Fenced" || result._tag === "Cancelled") {
      // Taken back or cancelled: nothing was recorded; the slot still goes to the next waiter.
      if (yield* giveBackLease(a.job, slot.name, false)) yield* handOffNow(slot.cap)
      return result
    }
    const timedOut = Exit.isFailure(exit) &&
      Option.exists(Cause.failureOption(exit.cause), (e) => e instanceof JobTimeoutError)
    if (!timedOut) {
      const released = yield* giveBackLease(a.job, slot.name, false)
      if (released === true) {
        yield* handOffNow(slot.cap)
        return result
      }
      // undefined: the release failed; the slot will expire (the failure is logged).
      if (released === undefined) return result
    }
    const owner = yield* Effect.orElseSucceed(a.leases.ownerOf(slot.name), () => Option.some(a.token))
    if (Option.contains(owner, a.token)) return result
    return yield* reportLeaseLost(result, {
      job: a.job,
      lease: slot,
      token: a.token,
      holder: Option.getOrNull(owner),
      when: timedOut ? "timed out" : "ended"
    })
  })
