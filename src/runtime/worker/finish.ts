/**
 * An attempt's end once perform has run (docs/behaviour.md §6, §8): its outcome written (fenced
 * on the claim token) with its lease released and handed off, or passed straight to this
 * worker's next run of its key (./keyGate.ts); after a timeout, the lease left to expire and
 * reported if it was already taken over.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, Effect, Exit, Option } from "effect"
import { Fenced, JobCancelled, JobTimeoutError } from "../../core/errors.ts"
import type { BackoffOptions } from "../../core/jobs.ts"
import type { JobLeases, JobStore } from "../../ports/JobStore.ts"
import type { HeldLease } from "../Job.ts"
import type { Attempt, Steps } from "./attemptState.ts"
import type { KeyGate } from "./keyGate.ts"
import {
  describe,
  giveBackLease,
  handOffNow,
  type Held,
  logCancelled,
  recordFailure,
  recordSuccess,
  releaseFenced,
  reportLeaseLost
} from "./outcome.ts"
import { jobRef, ProcessResult } from "./results.ts"

/** How perform ended, and what the attempt's end needs to know besides the attempt itself. */
export interface AfterPerform {
  readonly exit: Exit.Exit<unknown, unknown>
  /** The lease the attempt ran under, if any. */
  readonly held: HeldLease | undefined
  /** The lease its job type names (the key jobs wait on; a slot's name can differ). */
  readonly leaseName: string | undefined
  readonly backoff: BackoffOptions
  /** Called once only the outcome write is left (see `RunClaimedOptions.performed`, ./attempt.ts). */
  readonly performed: (() => void) | undefined
}

/** Whether `exit` failed with an error `is` accepts. */
const failedWith = (exit: Exit.Exit<unknown, unknown>, is: (e: unknown) => boolean) =>
  Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), is)

/**
 * Ends the attempt after perform: records its outcome, fenced on the claim token, and returns
 * its result. The lease goes with the outcome write, except after a timeout: perform may still
 * be running, so the lease is left to expire. An attempt of this worker waiting for the lease
 * takes it next (./keyGate.ts): the write passes the lease straight to it and wakes no waiter in
 * the database, and it starts without taking the lease (unless a job waits on it asleep,
 * `unlessWaiting`: then the write hands off).
 */
export function* finish(a: Attempt, p: AfterPerform): Steps<ProcessResult, SqlError, JobStore | JobLeases> {
  const { gate, job, token } = a
  const { exit, held, leaseName } = p
  const timedOut = failedWith(exit, (e) => e instanceof JobTimeoutError)
  const next = gate !== undefined && held !== undefined && !timedOut
    ? gate.finishing(token, a.clock.unsafeCurrentTimeMillis())
    : undefined
  // Succeeded, and its lease (if any) goes to nobody waiting here: only the write is left.
  if (next === undefined && Exit.isSuccess(exit)) p.performed?.()
  let handedOff = false
  const release: Held | undefined = timedOut || held === undefined
    ? undefined
    : releaseOf(a, held, next, () => {
      handedOff = true
    })
  let result = yield* record(a, exit, p.backoff, release)

  // Jobs wait on the key's own name; the store handed off to the released slot's name only.
  if (
    release !== undefined && (release.handOff || handedOff) && release.name !== leaseName && leaseName !== undefined
  ) {
    yield* handOffNow(leaseName)
  }

  // A timed-out run whose lease was already taken over is still a possible overlap: report it.
  if (held !== undefined && timedOut) {
    const owner = yield* Effect.orElseSucceed(a.leases.ownerOf(held.name), () => Option.some(token))
    if (!Option.contains(owner, token)) {
      result = yield* reportLeaseLost(result, {
        job,
        lease: held,
        token,
        holder: Option.getOrNull(owner),
        when: "timed out"
      })
    }
  }
  return result
}

/**
 * How the outcome write releases `held`: handed off to the database's next waiter, or, with
 * `next` (the attempt this worker's gate promised the lease to), passed to it. `handedOff` is
 * called when the write released and handed off instead of passing it on.
 */
const releaseOf = (
  a: Attempt,
  held: HeldLease,
  next: ReturnType<KeyGate["finishing"]>,
  handedOff: () => void
): Held => {
  const gate = a.gate
  return {
    ...held,
    handOff: next === undefined,
    transferTo: next === undefined
      ? undefined
      : { owner: next.owner, host: a.o.host, expiresAt: next.expiresAt, unlessWaiting: next.unlessWaiting },
    passedOn: next === undefined || gate === undefined ? undefined : (fencingToken) => {
      if (fencingToken === undefined) {
        handedOff()
        gate.passedOn(a.token, undefined)
        return Effect.void
      }
      const lease = { name: held.name, fencingToken, expiresAt: next.expiresAt }
      // It runs first: this attempt's own bookkeeping can wait. Its waiter gone (the worker is
      // stopping), the lease is given back for it.
      return gate.passedOn(a.token, lease)
        ? Effect.yieldNow()
        : Effect.asVoid(giveBackLease({ ...a.job, claimToken: next.owner }, lease.name))
    }
  }
}

/** Writes the attempt's outcome from how perform ended (a cancelled or fenced attempt writes none). */
function* record(
  a: Attempt,
  exit: Exit.Exit<unknown, unknown>,
  backoff: BackoffOptions,
  release: Held | undefined
): Steps<ProcessResult, SqlError, JobStore | JobLeases> {
  const job = a.job
  let result: ProcessResult
  if (failedWith(exit, (e) => e instanceof JobCancelled)) {
    yield* logCancelled("perform stopped at a heartbeat")
    result = ProcessResult.Cancelled({ job: jobRef(job), leaseLost: false })
    if (release !== undefined) result = yield* releaseFenced(job, release, result)
  } else if (failedWith(exit, (e) => e instanceof Fenced)) {
    yield* Effect.logWarning("attempt fenced: perform stopped on a fenced heartbeat; nothing recorded")
    result = ProcessResult.Fenced({ job: jobRef(job), leaseLost: false })
    if (release !== undefined) result = yield* releaseFenced(job, release, result)
  } else if (Exit.isSuccess(exit)) {
    result = yield* recordSuccess(job, release)
  } else {
    result = yield* recordFailure(job, backoff, describe(exit.cause), release)
  }
  return result
}
