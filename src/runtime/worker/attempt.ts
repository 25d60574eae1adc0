/**
 * One attempt of a claimed job (docs/behaviour.md §6, §8): decode its payload, take its lease
 * (or defer the job when the lease is busy), run perform (./perform.ts), and record what happened
 * (./outcome.ts). Nothing here fails for a job's sake: a bad payload, an unknown type or a
 * perform error become outcomes.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Cause, Clock, Context, Effect, Either, Exit, type Fiber, FiberRef, HashMap, Option, Schema } from "effect"
import type { ParseError } from "effect/ParseResult"
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
import { isTracing } from "../../core/tracer.ts"
import { setInPlace } from "../inPlace.ts"
import {
  cancelledMeanwhile,
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
import { type InFlight, perform } from "./perform.ts"
import { anySlotFree, firstToFree, slotNames, takeSlot } from "./slots.ts"
import type { KeyGate, Turn } from "./keyGate.ts"
import { watch, type Watch } from "./watchdog.ts"
import { jobRef, ProcessResult } from "./results.ts"

/** The services of the worker's entry points (the long-running worker's scheduler needs `ScheduleStore`). */
export type WorkerServices = JobStore | JobLeases | Jobs | ScheduleStore

// Each job type's decoder, made once per Schema (not per attempt).
const decoders = new WeakMap<Schema.Schema<unknown, any>, (u: unknown) => Effect.Effect<unknown, ParseError>>()

/**
 * Decodes a stored payload with its type's Schema, or says why it no longer decodes. A schema
 * that decodes synchronously (nearly all) gives its result at once, as a plain Either, without
 * an effect's steps per attempt; one with an asynchronous transformation gives an effect to run.
 */
const decodePayload = (
  job: JobRow,
  schema: Schema.Schema<unknown, any>
): Either.Either<unknown, string> | Effect.Effect<Either.Either<unknown, string>> => {
  let json: unknown
  try {
    json = JSON.parse(job.payload)
  } catch (e) {
    return Either.left(String(e))
  }
  let decode = decoders.get(schema)
  if (decode === undefined) {
    decode = Schema.decodeUnknown(schema)
    decoders.set(schema, decode)
  }
  // Schema's decoders give an Either (itself an effect) when nothing asynchronous ran.
  const decoded = decode(json)
  return Either.isEither(decoded)
    ? Either.mapLeft(decoded as Either.Either<unknown, ParseError>, (e) => e.message)
    : Effect.either(Effect.mapError(decoded, (e) => e.message))
}

/**
 * Takes a slot of the job's lease after the claim and before perform (./slots.ts; one slot, the
 * lease itself, unless the type sets `concurrencyLimit`). All busy: perform does not run; the job
 * waits pending on the lease name until the first holder's lease should end, its attempt given
 * back (docs/behaviour.md §8). Succeeds with the held lease, or with the attempt's result (left)
 * when it ends here. `busy`: this worker's own attempts hold every slot (./keyGate.ts), so the
 * job defers without asking. `keepPlace`: the job was next in line for its key here (./keyGate.ts
 * `Turn`, `inLine`); busy, it defers due at its own run_at, not asleep.
 */
const takeLease = (
  job: JobRow,
  leaseName: string,
  limit: number,
  backoff: BackoffOptions,
  o: Resolved,
  busy: Extract<Turn, { _tag: "Busy" }> | undefined,
  keepPlace = false
): Effect.Effect<Either.Either<HeldLease, ProcessResult>, SqlError, JobStore | JobLeases> =>
  Effect.gen(function*() {
    const leases = yield* JobLeases
    const token = job.claimToken!
    const now = yield* Clock.currentTimeMillis
    const expiresAt = leaseExpiresAt(now, job.claimTimeout)
    const names = slotNames(leaseName, limit)
    if (busy !== undefined) {
      return yield* defer(
        job,
        leaseName,
        names,
        { owner: busy.holder, expiresAt: busy.expiresAt },
        busy.releasedMeanwhile
      )
    }
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
    return yield* defer(
      job,
      leaseName,
      names,
      Option.getOrUndefined(yield* firstToFree(leases, names)),
      () => true,
      keepPlace
    )
  })

/**
 * Defers a job whose lease is busy: pending again until the holder's lease should end, its
 * attempt given back, waiting on `leaseName`. A holder may have released (and found no waiter to
 * hand off to) between the look at the lease and the deferral (`releasedMeanwhile`): the lease is
 * read again, and if a slot is free, the job is handed off at once. `keepPlace`: pending due at
 * its own run_at instead (see `takeLease`), so it is claimed again before the key's later jobs
 * and no holder's release has to wake it.
 */
const defer = (
  job: JobRow,
  leaseName: string,
  names: ReadonlyArray<string>,
  holder: { readonly owner: string; readonly expiresAt: number } | undefined,
  releasedMeanwhile: () => boolean,
  keepPlace = false
): Effect.Effect<Either.Either<HeldLease, ProcessResult>, SqlError, JobStore | JobLeases> =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const now = yield* Clock.currentTimeMillis
    const delay = keepPlace ? 0 : busyDelaySeconds(holder?.expiresAt, now)
    const retryAt = keepPlace ? Math.min(job.runAt, now) : now + delay * 1000
    const holderOwner = holder?.owner ?? null
    if (!(yield* store.defer(job.id, job.claimToken!, now, retryAt, leaseName))) {
      if (yield* cancelledMeanwhile(job)) {
        yield* logCancelled("its job was cancelled before it started; not run")
        return Either.left(ProcessResult.Cancelled({ job: jobRef(job), leaseLost: false }))
      }
      return Either.left(ProcessResult.Fenced({ job: jobRef(job), leaseLost: false }))
    }
    const leases = yield* JobLeases
    if (
      releasedMeanwhile() &&
      (yield* Effect.orElseSucceed(anySlotFree(leases, names, yield* Clock.currentTimeMillis), () => false))
    ) {
      yield* handOffNow(leaseName)
    }
    yield* Effect.logDebug(
      `lease ${leaseName} busy (held by ${holderOwner ?? "nobody"}); ${
        keepPlace ? "taken as its turn came here: pending again, due, in its place" : `deferred ${delay} s`
      }`
    )
    return Either.left(ProcessResult.Deferred({ job: jobRef(job), leaseName, retryAt, holder: holderOwner }))
  })

/**
 * A lease the claim took that is no longer fresh (src/core/lease.ts isClaimLeaseFresh: the job
 * waited, or this process was paused), renewed from `now`, owner-fenced, before the attempt uses
 * it. Undefined when it was taken over meanwhile: the attempt then takes its lease as if the
 * claim had not.
 */
const renewClaimed = (
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
 * A claimed job that waited at least this long (by the Clock) since its claim, in a long-running
 * worker's buffer or for its key (./keyGate.ts), is read again before it starts, and not run if
 * it was cancelled meanwhile (docs/behaviour.md §14). One that waited less starts at once: a
 * cancel that soon after the claim is no different from one just after the start, which
 * perform's next heartbeat or the outcome write notices. A busy worker's jobs wait a few
 * milliseconds, so they skip the read (a third of a busy drain's statements, issue 13).
 */
export const RECHECK_AFTER_MS = 50

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
  /** This worker's keys (./keyGate.ts): an attempt whose key its other attempts hold waits for them. */
  readonly gate?: KeyGate | undefined
  /**
   * The fiber is the attempt's own (a long-running worker's attempt fiber, or its runner on
   * SQLite): the attempt's log annotations, these with the job's (`attemptAnnotations`), are set
   * on it in place and left there until the next attempt's replace them. Default: the job's are
   * added to the caller's for the attempt only.
   */
  readonly annotations?: HashMap.HashMap<string, unknown> | undefined
  /**
   * Called once perform has succeeded, unless the attempt passes its lease to one waiting for it
   * in this worker (./keyGate.ts): all that is left is its outcome write, and its lease's release
   * (a long-running worker's runner starts its next job meanwhile, ./longRunning.ts).
   */
  readonly performed?: (() => void) | undefined
  /** The caller stops perform itself when the attempt is interrupted (./perform.ts `InFlight`). */
  readonly inFlight?: InFlight | undefined
}

/**
 * The log annotations every line of an attempt of `job` carries, added to `base`: with the lease
 * its enqueue named (`claimLease`) as `leaseName`; the attempt corrects that in the rare case its
 * job type now names another (`runAttempt`). `base` is never an earlier attempt's (a long-running
 * worker's runners pass the worker's own), so a job without a lease leaves `base` as it is.
 */
export const attemptAnnotations = (
  base: HashMap.HashMap<string, unknown>,
  job: JobRow
): HashMap.HashMap<string, unknown> =>
  // One transient edit of the map, not four copies of it. Setting the fiber's annotations costs a
  // copy of its FiberRefs and a hash of the whole map, so the lease's name is set with the rest,
  // not added later (issue 13: 2 µs of an exclusive job's 67 on the main thread).
  HashMap.mutate(base, (m) => {
    HashMap.set(m, "jobId", job.id)
    HashMap.set(m, "jobName", job.name)
    HashMap.set(m, "attempt", job.attempts)
    if (job.claimLease !== null) HashMap.set(m, "leaseName", job.claimLease)
  })

/** Runs one claimed job to its outcome. */
export const runClaimed = (
  job: JobRow,
  o: Resolved,
  options: RunClaimedOptions = {}
): Effect.Effect<ProcessResult, SqlError, WorkerServices> =>
  // Whether a tracer is installed, the Clock and the log level: read off the fiber in one step,
  // in which an attempt in a fiber of its own also sets its log annotations.
  Effect.withFiberRuntime((fiber) => {
    if (options.annotations !== undefined) {
      setInPlace(fiber, FiberRef.currentLogAnnotations, attemptAnnotations(options.annotations, job))
    }
    const observed = observeAttempt(
      fiber,
      job,
      runAttempt(
        job,
        o,
        options,
        // The attempt's services, read once: its requirements say they are there.
        fiber.currentContext as Context.Context<JobLeases | JobStore | Jobs>,
        fiber
      )
    )
    const traced = isTracing(fiber.currentTracer) ? traceAttempt(job, observed, options.rootSpan ?? false) : observed
    return options.annotations !== undefined
      ? traced
      : Effect.locallyWith(traced, FiberRef.currentLogAnnotations, (base) => attemptAnnotations(base, job))
  })

const runAttempt = (
  job: JobRow,
  o: Resolved,
  { annotations, gate, inFlight, performed, recheck = false, timer }: RunClaimedOptions,
  services: Context.Context<JobLeases | JobStore | Jobs>,
  // The fiber the attempt runs in: whether a tracer is installed, and its log annotations.
  fiber: Fiber.RuntimeFiber<unknown, unknown>
): Effect.Effect<ProcessResult, SqlError, WorkerServices> =>
  Effect.gen(function*() {
    const annotated = annotations !== undefined
    const tracing = isTracing(fiber.currentTracer)
    const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
    const leases = Context.get(services, JobLeases)
    const store = Context.get(services, JobStore)
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
    // Read the claim again: undefined when it is still ours and the job not cancelled.
    const checkClaim = Effect.gen(function*() {
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
      return undefined
    })
    if (recheck) {
      const stop = yield* checkClaim
      if (stop !== undefined) {
        return stop
      }
    }

    const registered = Context.get(services, Jobs).get(job.name)
    if (Option.isNone(registered)) {
      return yield* recordFailure(
        job,
        DEFAULT_BACKOFF,
        describe(Cause.fail(new UnknownJobTypeError({ jobName: job.name }))),
        claimed
      )
    }
    const type = registered.value.type
    const decoding = decodePayload(job, type.schema)
    const decoded = Either.isEither(decoding) ? decoding : yield* decoding
    if (Either.isLeft(decoded)) {
      const error = new PayloadError({ jobName: job.name, reason: `stored payload no longer decodes: ${decoded.left}` })
      return yield* recordFailure(job, type.backoff, describe(Cause.fail(error)), claimed)
    }
    const payload = decoded.right

    // The key function may throw on a stored payload (another version of the app enqueued it):
    // that fails the attempt.
    let named: Either.Either<string | undefined, string>
    try {
      named = Either.right(leaseNameFor(type.name, type.lease, payload))
    } catch (e) {
      named = Either.left(`concurrencyKeyFor threw: ${String(e)}`)
    }
    if (Either.isLeft(named)) {
      return yield* recordFailure(job, type.backoff, named.left, claimed)
    }
    const leaseName = named.right
    let held: HeldLease | undefined
    if (claimed !== undefined && claimed.name !== leaseName) {
      // The job type's lease changed since the enqueue (another version of the app): the lease
      // taken is not this attempt's; give it back (to its next waiter) and take the right one.
      yield* Effect.logDebug(`claim took lease ${claimed.name}, not ${leaseName ?? "none"}; released`)
      yield* giveBack(claimed)
    }
    if (leaseName !== undefined) {
      if (tracing) {
        yield* annotateAttempt("leasehold.lease.name", leaseName)
      }
      // A lease the claim took is used as it is when taken at most a second ago, else renewed
      // first. The Clock read in place: a fresh lease, nearly every one, costs no step.
      const now = clock.unsafeCurrentTimeMillis()
      held = claimed?.name !== leaseName
        ? undefined
        : isClaimLeaseFresh(claimed.expiresAt, now, job.claimTimeout)
        ? claimed
        : yield* renewClaimed(claimed, token, job.claimTimeout, now, leases)
      if (held === undefined) {
        // A lease its claim took that could not be renewed (taken over, or the renewal failed):
        // the attempt asks the database itself, where its own lease is found as ours.
        const turn: Turn = gate === undefined || claimed?.name === leaseName
          ? { _tag: "Open" }
          : yield* gate.turn(leaseName, type.concurrencyLimit, token, job)
        // The lease the run before passed to this attempt as it finished (./keyGate.ts).
        const passed = turn._tag === "Waited" ? turn.lease : undefined
        if (turn._tag === "Waited") {
          yield* Effect.logDebug(`waited ${turn.ms} ms for this worker's run of ${leaseName} to end`)
          if (turn.ms >= RECHECK_AFTER_MS) {
            const stop = yield* checkClaim
            if (stop !== undefined) {
              if (passed !== undefined) {
                yield* giveBackLease(job, passed.name)
              }
              return stop
            }
          }
        }
        if (passed !== undefined) {
          held = { name: passed.name, owner: token, expiresAt: passed.expiresAt, fencingToken: passed.fencingToken }
        } else {
          const taken = yield* takeLease(
            job,
            leaseName,
            type.concurrencyLimit,
            type.backoff,
            o,
            turn._tag === "Busy" ? turn : undefined,
            turn._tag === "Waited" && turn.inLine
          )
          if (Either.isLeft(taken)) {
            return taken.left
          }
          held = taken.right
        }
      }
      if (gate !== undefined) {
        gate.enter(leaseName, token, held.expiresAt)
        // Off the start's path: the next job of a busy key is claimed while this one runs.
        if (gate.wakeNext(leaseName)) {
          yield* Effect.fork(handOffNow(leaseName))
        }
      }
      if (tracing) {
        yield* annotateAttempt("leasehold.lease.fencing_token", String(held.fencingToken))
      }
    }

    // `leaseName` was annotated from the row's lease (`attemptAnnotations`); corrected in place
    // when the job type now names another, for the rest of the attempt: a fiber whose annotations
    // were set in place (`annotations`) is the attempt's until the next attempt sets its own, and
    // otherwise `runClaimed` set them for the attempt only (its scope puts back the caller's).
    if (leaseName !== (job.claimLease ?? undefined)) {
      const current = fiber.getFiberRef(FiberRef.currentLogAnnotations)
      setInPlace(
        fiber,
        FiberRef.currentLogAnnotations,
        leaseName === undefined ? HashMap.remove(current, "leaseName") : HashMap.set(current, "leaseName", leaseName)
      )
    }
    const exit = yield* perform(job, registered.value, payload, o.host, held, timer ?? watch, services, inFlight)
    const failedWith = (is: (e: unknown) => boolean) =>
      Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), is)
    const timedOut = failedWith((e) =>
      e instanceof JobTimeoutError
    )

    // Record the outcome, fenced on the claim token. The lease goes with it, except after a
    // timeout: perform may still be running, so the lease is left to expire.
    // An attempt of this worker waiting for the lease takes it next (./keyGate.ts): the write
    // passes the lease straight to it and wakes no waiter in the database, and it starts without
    // taking the lease (unless a job waits on it asleep, `unlessWaiting`: then the write hands off).
    const next = gate !== undefined && held !== undefined && !timedOut
      ? gate.finishing(token, clock.unsafeCurrentTimeMillis())
      : undefined
    // Succeeded, and its lease (if any) goes to nobody waiting here: only the write is left.
    if (next === undefined && Exit.isSuccess(exit)) performed?.()
    let handedOff = false
    const release: Held | undefined = timedOut || held === undefined ? undefined : {
      ...held,
      handOff: next === undefined,
      transferTo: next === undefined
        ? undefined
        : { owner: next.owner, host: o.host, expiresAt: next.expiresAt, unlessWaiting: next.unlessWaiting },
      passedOn: next === undefined || gate === undefined ? undefined : (fencingToken) => {
        if (fencingToken === undefined) {
          handedOff = true
          gate.passedOn(token, undefined)
          return Effect.void
        }
        const lease = { name: held!.name, fencingToken, expiresAt: next.expiresAt }
        // It runs first: this attempt's own bookkeeping can wait. Its waiter gone (the worker is
        // stopping), the lease is given back for it.
        return gate.passedOn(token, lease)
          ? Effect.yieldNow()
          : Effect.asVoid(giveBackLease({ ...job, claimToken: next.owner }, lease.name))
      }
    }
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
    if (
      release !== undefined && (release.handOff || handedOff) && release.name !== leaseName && leaseName !== undefined
    ) {
      yield* handOffNow(leaseName)
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
