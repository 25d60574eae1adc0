/**
 * One attempt of a claimed job (docs/behaviour.md §6, §8): decode its payload, take its lease
 * (or defer the job when the lease is busy), run perform (./perform.ts), and record what happened
 * (./outcome.ts). Nothing here fails for a job's sake: a bad payload, an unknown type or a
 * perform error become outcomes.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, Clock, Effect, Either, Exit, Option, Schema } from "effect"
import { Fenced, JobCancelled, JobTimeoutError, PayloadError, UnknownJobTypeError } from "../../core/errors.ts"
import { type BackoffOptions, DEFAULT_BACKOFF } from "../../core/jobs.ts"
import { busyDelaySeconds, isClaimLeaseFresh, leaseExpiresAt, leaseNameFor } from "../../core/lease.ts"
import type { JobRow } from "../../core/model.ts"
import { JobLeases, JobStore } from "../../ports/JobStore.ts"
import type { ScheduleStore } from "../../ports/ScheduleStore.ts"
import { type HeldLease, Jobs } from "../Job.ts"
import type { Resolved } from "./options.ts"
import { observeAttempt } from "./observe.ts"
import { annotateAttempt, traceAttempt } from "../tracing.ts"
import {
  cancelledMeanwhile,
  describe,
  giveBackLease,
  logCancelled,
  recordFailure,
  recordSuccess,
  releaseFenced,
  reportLeaseLost
} from "./outcome.ts"
import { perform } from "./perform.ts"
import { anySlotFree, firstToFree, slotNames, takeSlot } from "./slots.ts"
import type { Watch } from "./watchdog.ts"
import { jobRef, ProcessResult } from "./results.ts"

/** The services of the worker's entry points (the long-running worker's scheduler needs `ScheduleStore`). */
export type WorkerServices = JobStore | JobLeases | Jobs | ScheduleStore

/** Decodes a stored payload with its type's Schema, or says why it no longer decodes. */
const decodePayload = (job: JobRow, schema: Schema.Schema<unknown, any>) =>
  Effect.either(
    Effect.flatMap(
      Effect.try({ try: () => JSON.parse(job.payload) as unknown, catch: (e) => String(e) }),
      (json) => Effect.mapError(Schema.decodeUnknown(schema)(json), (e) => e.message)
    )
  )

/**
 * Takes a slot of the job's lease after the claim and before perform (./slots.ts; one slot, the
 * lease itself, unless the type sets `concurrencyLimit`). All busy: perform does not run; the job
 * waits pending on the lease name until the first holder's lease should end, its attempt given
 * back (docs/behaviour.md §8). Succeeds with the held lease, or with the attempt's result (left)
 * when it ends here.
 */
const takeLease = (
  job: JobRow,
  leaseName: string,
  limit: number,
  backoff: BackoffOptions,
  o: Resolved
): Effect.Effect<Either.Either<HeldLease, ProcessResult>, SqlError, JobStore | JobLeases> =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const leases = yield* JobLeases
    const token = job.claimToken!
    const now = yield* Clock.currentTimeMillis
    const expiresAt = leaseExpiresAt(now, job.claimTimeout)
    const names = slotNames(leaseName, limit)
    const acquired = yield* Effect.either(
      Effect.zipRight(
        // JobLeases remembers a table it has seen (src/adapters/jobLeases.ts): one catalog query per store.
        leases.ensureTable,
        takeSlot(leases, names, { owner: token, host: o.host, now, expiresAt })
      )
    )
    if (Either.isLeft(acquired)) {
      return Either.left(yield* recordFailure(job, backoff, describe(Cause.fail(acquired.left)), undefined))
    }
    if (Option.isSome(acquired.right)) {
      const { name, token: fencingToken } = acquired.right.value
      return Either.right({ name, owner: token, expiresAt, fencingToken })
    }
    const holder = yield* firstToFree(leases, names)
    const delay = busyDelaySeconds(Option.getOrUndefined(Option.map(holder, (h) => h.expiresAt)), now)
    const retryAt = now + delay * 1000
    const holderOwner = Option.getOrNull(Option.map(holder, (h) => h.owner))
    if (!(yield* store.defer(job.id, token, now, retryAt, leaseName))) {
      if (yield* cancelledMeanwhile(job)) {
        yield* logCancelled("its job was cancelled before it started; not run")
        return Either.left(ProcessResult.Cancelled({ job: jobRef(job), leaseLost: false }))
      }
      return Either.left(ProcessResult.Fenced({ job: jobRef(job), leaseLost: false }))
    }
    // A holder may have released (and found no waiter to hand off to) between our
    // tryAcquire and the defer: look again, and if a slot is free, hand off now.
    if (yield* Effect.orElseSucceed(anySlotFree(leases, names, yield* Clock.currentTimeMillis), () => false)) {
      yield* Effect.ignoreLogged(store.handOff(leaseName, yield* Clock.currentTimeMillis))
    }
    yield* Effect.logDebug(`lease ${leaseName} busy (held by ${holderOwner ?? "nobody"}); deferred ${delay} s`)
    return Either.left(ProcessResult.Deferred({ job: jobRef(job), leaseName, retryAt, holder: holderOwner }))
  })

/**
 * A lease the claim took, as the attempt may use it: as is when taken at most a second ago, else
 * renewed from now first, owner-fenced (the job waited, or this process was paused; src/core/
 * lease.ts isClaimLeaseFresh). Undefined when it was taken over meanwhile: the attempt then takes
 * its lease as if the claim had not.
 */
const stillHeld = (claimed: HeldLease, token: string, claimTimeout: number | null) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    if (isClaimLeaseFresh(claimed.expiresAt, now, claimTimeout)) return claimed
    const expiresAt = leaseExpiresAt(now, claimTimeout)
    const renewed = yield* Effect.orElseSucceed(
      Effect.flatMap(JobLeases, (l) => l.renew({ name: claimed.name, owner: token, now, expiresAt })),
      () => false
    )
    return renewed ? { ...claimed, expiresAt } : undefined
  })

/** How `runClaimed` runs an attempt. */
export interface RunClaimedOptions {
  /** Watches its timeout (default: a timer of its own). */
  readonly timer?: Watch | undefined
  /** The job waited since its claim: its claim is read first, and a job cancelled meanwhile is not run. */
  readonly recheck?: boolean | undefined
  /**
   * Its span starts a trace of its own even inside a caller's span (a long-running worker's
   * attempts: the span its scope was opened in is no parent of theirs). Default: it nests.
   */
  readonly rootSpan?: boolean | undefined
}

/** Runs one claimed job to its outcome. */
export const runClaimed = (
  job: JobRow,
  o: Resolved,
  options: RunClaimedOptions = {}
): Effect.Effect<ProcessResult, SqlError, WorkerServices> =>
  traceAttempt(
    job,
    observeAttempt(job, runAttempt(job, o, options.timer, options.recheck ?? false)),
    options.rootSpan ?? false
  ).pipe(
    Effect.annotateLogs({ jobId: job.id, jobName: job.name, attempt: job.attempts })
  )

const runAttempt = (
  job: JobRow,
  o: Resolved,
  timer: Watch | undefined,
  recheck: boolean
): Effect.Effect<ProcessResult, SqlError, WorkerServices> =>
  Effect.gen(function*() {
    const leases = yield* JobLeases
    const store = yield* JobStore
    const token = job.claimToken!
    // The lease its claim took for it (PostgreSQL; src/adapters/sql/dialect.ts `ClaimLeaseStrategy`):
    // held from the claim on, so every way out before perform gives it back, quietly (an attempt
    // that never ran overlapped nothing, whoever holds the lease now).
    const claimed: HeldLease | undefined = job.leaseTaken === undefined ? undefined : {
      name: job.leaseTaken.name,
      owner: token,
      expiresAt: job.leaseTaken.expiresAt,
      fencingToken: job.leaseTaken.fencingToken
    }
    const giveBack = (lease: HeldLease) => Effect.asVoid(giveBackLease(job, lease.name))
    const notRun = (result: ProcessResult) =>
      claimed === undefined ? Effect.succeed(result) : Effect.as(giveBack(claimed), result)
    if (recheck) {
      const state = yield* Effect.onError(store.claimState({ id: job.id, token }), () =>
        claimed === undefined ? Effect.void : giveBack(claimed))
      if (state === "cancelled") {
        yield* logCancelled("its job was cancelled before it started; not run")
        return yield* notRun(ProcessResult.Cancelled({ job: jobRef(job), leaseLost: false }))
      }
      if (state === "lost") {
        yield* Effect.logWarning("attempt fenced: its claim was taken back before it started; not run")
        return yield* notRun(ProcessResult.Fenced({ job: jobRef(job), leaseLost: false }))
      }
    }

    const registered = (yield* Jobs).get(job.name)
    if (Option.isNone(registered)) {
      return yield* recordFailure(
        job,
        DEFAULT_BACKOFF,
        describe(Cause.fail(new UnknownJobTypeError({ jobName: job.name }))),
        claimed
      )
    }
    const type = registered.value.type
    const decoded = yield* decodePayload(job, type.schema)
    if (Either.isLeft(decoded)) {
      const error = new PayloadError({ jobName: job.name, reason: `stored payload no longer decodes: ${decoded.left}` })
      return yield* recordFailure(job, type.backoff, describe(Cause.fail(error)), claimed)
    }
    const payload = decoded.right

    // The key function may throw on a stored payload (another version of the app enqueued it):
    // that fails the attempt.
    const named = yield* Effect.either(Effect.try({
      try: () =>
        leaseNameFor(type.name, type.lease, payload),
      catch: (e) => `concurrencyKeyFor threw: ${String(e)}`
    }))
    if (Either.isLeft(named)) return yield* recordFailure(job, type.backoff, named.left, claimed)
    const leaseName = named.right
    let held: HeldLease | undefined
    if (claimed !== undefined && claimed.name !== leaseName) {
      // The job type's lease changed since the enqueue (another version of the app): the lease
      // taken is not this attempt's; give it back (to its next waiter) and take the right one.
      yield* Effect.logDebug(`claim took lease ${claimed.name}, not ${leaseName ?? "none"}; released`)
      yield* giveBack(claimed)
    }
    if (leaseName !== undefined) {
      yield* annotateAttempt("leasehold.lease.name", leaseName)
      held = claimed?.name === leaseName ? yield* stillHeld(claimed, token, job.claimTimeout) : undefined
      if (held === undefined) {
        const taken = yield* takeLease(job, leaseName, type.concurrencyLimit, type.backoff, o)
        if (Either.isLeft(taken)) return taken.left
        held = taken.right
      }
      yield* annotateAttempt("leasehold.lease.fencing_token", String(held.fencingToken))
    }

    const exit = yield* perform(job, registered.value, payload, o.host, held, timer).pipe(
      Effect.annotateLogs(leaseName === undefined ? {} : { leaseName })
    )
    const failedWith = (is: (e: unknown) => boolean) =>
      Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), is)
    const timedOut = failedWith((e) => e instanceof JobTimeoutError)

    // Record the outcome, fenced on the claim token. The lease goes with it, except after a
    // timeout: perform may still be running, so the lease is left to expire.
    const release = timedOut ? undefined : held
    let result: ProcessResult
    if (failedWith((e) => e instanceof JobCancelled)) {
      yield* logCancelled("perform stopped at a heartbeat")
      result = ProcessResult.Cancelled({ job: jobRef(job), leaseLost: false })
      if (release !== undefined) result = yield* releaseFenced(job, release, result)
    } else if (failedWith((e) => e instanceof Fenced)) {
      yield* Effect.logWarning("attempt fenced: perform stopped on a fenced heartbeat; nothing recorded")
      result = ProcessResult.Fenced({ job: jobRef(job), leaseLost: false })
      if (release !== undefined) result = yield* releaseFenced(job, release, result)
    } else if (Exit.isSuccess(exit)) {
      result = yield* recordSuccess(job, release)
    } else {
      result = yield* recordFailure(job, type.backoff, describe(exit.cause), release)
    }

    // Jobs wait on the key's own name; the store handed off to the released slot's name only.
    if (release !== undefined && release.name !== leaseName && leaseName !== undefined) {
      yield* Effect.ignoreLogged(Effect.flatMap(Clock.currentTimeMillis, (now) => store.handOff(leaseName, now)))
    }

    // A timed-out run whose lease was already taken over is still a possible overlap: report it.
    if (held !== undefined && timedOut) {
      const owner = yield* Effect.orElseSucceed(leases.ownerOf(held.name), () => Option.some(token))
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
  })
