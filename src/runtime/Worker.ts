/**
 * The worker loop: reap, claim, run one attempt (with its lease), and record what happened
 * (docs/behaviour.md §5–§9). processNext is one turn; processQueue and tick loop it.
 *
 * An attempt: claim → [lease: take it, or defer the job if busy] → perform under its timeout →
 * record completed / retry / dead (fenced on the claim token) → [release the lease and hand off
 * to the next job waiting on it].
 */
import type { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import {
  Cause,
  Clock,
  Context,
  Data,
  Deferred,
  Duration,
  Effect,
  Either,
  Exit,
  Fiber,
  Layer,
  Metric,
  Option,
  Queue,
  Redacted,
  Ref,
  Schedule,
  Schema,
  type Scope,
  Stream
} from "effect"
import * as Metrics from "./metrics.ts"
import { listenForever } from "./notify.ts"
import { randomUUID } from "node:crypto"
import {
  Fenced,
  JobTimeoutError,
  WorkerConfigError,
  type LeaseTableInTransactionError,
  LeaseLostError,
  PayloadError,
  UnknownJobTypeError
} from "../core/errors.ts"
import {
  type BackoffOptions,
  countsTowardLimit,
  cutError,
  decideFailure,
  decideReap,
  DEFAULT_BACKOFF,
  emptyTally,
  isInt32,
  MAX_CONCURRENCY,
  MAX_INT32,
  MAX_TIMEOUT_SECONDS,
  type QueueTally
} from "../core/jobs.ts"
import { busyDelaySeconds, DEFAULT_CLAIM_TIMEOUT_SECONDS, isExpired, leaseExpiresAt, leaseInputProblem, leaseNameFor } from "../core/lease.ts"
import { JobLeases, type JobRow, JobStore, type Outcome } from "../adapters/JobStore.ts"
import type { LeaseLockApi } from "../adapters/LeaseLock.ts"
import { defaultHost, durationMillis, type HeldLease, JobContext, type JobContextApi, Jobs, type RegisteredJob } from "./Job.ts"

/** Options of processNext, processQueue, tick and the worker. */
export interface ProcessOptions {
  /** Claim only from these queues (default: every queue). */
  readonly queues?: ReadonlyArray<string> | undefined
  /**
   * This worker's host name (default: machine name and pid): up to 255 characters, not ending in
   * a space (MySQL/MariaDB would take `h ` for `h`).
   */
  readonly host?: string | undefined
  /** Caps every job type's timeout (and so its lease window and reaper grace). */
  readonly timeoutCap?: Duration.DurationInput | undefined
  /**
   * With a cap > 0, at most this many processing jobs claimed by this host. A whole number from
   * 0 to 2^31 − 1 (the hosts table's `max_concurrent` INT column).
   */
  readonly hostCap?: number | undefined
  /** Most stale rows one reap looks at (default 25). */
  readonly reapLimit?: number | undefined
}

interface Resolved {
  readonly queues: ReadonlyArray<string> | undefined
  readonly host: string
  readonly timeoutCap: number | undefined
  readonly hostCap: number | undefined
  readonly reapLimit: number
  /** The timeout the reaper assumes for a row without one. */
  readonly defaultTimeout: number
}

let cachedHost: string | undefined
const seconds = (field: string, d: Duration.DurationInput | undefined) => {
  if (d === undefined) return Effect.succeed(undefined)
  if (typeof d === "number" && !(d > 0)) {
    return Effect.fail(new WorkerConfigError({ field, reason: `must be a positive duration, got ${d}` }))
  }
  const decoded = Duration.decodeUnknown(d)
  if (Option.isNone(decoded) || !Duration.isFinite(decoded.value) || Duration.toMillis(decoded.value) <= 0) {
    return Effect.fail(new WorkerConfigError({ field, reason: `must be a positive, finite duration, got ${String(d)}` }))
  }
  return Effect.succeed(Math.min(MAX_TIMEOUT_SECONDS, Math.max(1, Math.ceil(Duration.toMillis(decoded.value) / 1000))))
}

/** Checks the options once; bad values fail with a typed `WorkerConfigError`. */
const resolve = (o: ProcessOptions): Effect.Effect<Resolved, WorkerConfigError> =>
  Effect.gen(function*() {
    const cap = yield* seconds("timeoutCap", o.timeoutCap)
    if (o.hostCap !== undefined && !(isInt32(o.hostCap) && o.hostCap >= 0)) {
      return yield* new WorkerConfigError({ field: "hostCap", reason: `must be a whole number from 0 to ${MAX_INT32}, got ${o.hostCap}` })
    }
    if (o.reapLimit !== undefined && !(Number.isSafeInteger(o.reapLimit) && o.reapLimit >= 1)) {
      return yield* new WorkerConfigError({ field: "reapLimit", reason: `must be a whole number ≥ 1, got ${o.reapLimit}` })
    }
    const host = o.host ?? (cachedHost ??= defaultHost())
    // MySQL/MariaDB compare `h` and `h ` as equal (PAD SPACE): one hosts row for two workers, so a
    // trailing space is refused on every database, as for lease names and owners.
    const problem = leaseInputProblem("host", host) ?? (host.endsWith(" ") ? "ends with a space" : undefined)
    if (host.length === 0 || problem !== undefined) {
      return yield* new WorkerConfigError({ field: "host", reason: problem ?? "is empty" })
    }
    return {
      queues: o.queues,
      host,
      timeoutCap: cap,
      hostCap: o.hostCap,
      reapLimit: o.reapLimit ?? 25,
      defaultTimeout: cap ?? DEFAULT_CLAIM_TIMEOUT_SECONDS
    }
  })

/** The job an outcome is about. */
export interface JobRef {
  readonly id: string
  readonly name: string
  readonly queue: string
  /** The run number this attempt was (1 for the first). */
  readonly attempt: number
}

/**
 * What one processNext did. Switch on `_tag`:
 * - `Idle`: nothing was due.
 * - `Completed`: perform succeeded and the row says completed. `leaseLost`: its lease had been
 *   taken over by the time it finished (the run may have overlapped another; it is reported).
 * - `Failed`: perform failed (or timed out, or its payload or type was bad); `willRetry` with
 *   `retryAt`, or dead.
 * - `Fenced`: the attempt's claim had been reaped and re-claimed; nothing was recorded.
 * - `Deferred`: its lease was busy; the job waits until `retryAt` with its attempt given back.
 * - `Capped`: this host is at its cap. `Draining`: this host is draining and starts nothing.
 */
export type ProcessResult = Data.TaggedEnum<{
  Idle: {}
  Completed: { readonly job: JobRef; readonly leaseLost: boolean }
  Failed: {
    readonly job: JobRef
    readonly error: string
    readonly willRetry: boolean
    readonly retryAt: number | null
    readonly leaseLost: boolean
  }
  Fenced: { readonly job: JobRef; readonly leaseLost: boolean }
  Deferred: { readonly job: JobRef; readonly leaseName: string; readonly retryAt: number; readonly holder: string | null }
  Capped: { readonly running: number }
  Draining: { readonly until: number | null }
}>

/** Constructors and matchers of `ProcessResult`. */
export const ProcessResult = Data.taggedEnum<ProcessResult>()

/** What the services processNext needs. */
export type WorkerServices = JobStore | JobLeases | Jobs

const jobRef = (job: JobRow): JobRef => ({ id: job.id, name: job.name, queue: job.queue, attempt: job.attempts })

const describe = (cause: Cause.Cause<unknown>): string => {
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

// Lock tables known to exist, so the catalog is asked once per process and table.
const lockTablesSeen = new WeakSet<LeaseLockApi>()
const ensureLockTable = (leases: LeaseLockApi): Effect.Effect<void, SqlError | LeaseTableInTransactionError> =>
  lockTablesSeen.has(leases) ? Effect.void : Effect.tap(leases.ensureTable, () => Effect.sync(() => lockTablesSeen.add(leases)))

/**
 * Reaps stale processing rows: an idempotent type's go back to pending (or dead when retries are
 * used up); a non-idempotent type's are marked interrupted. Returns how many this call reaped.
 */
export const reap = (options: ProcessOptions = {}): Effect.Effect<number, SqlError | WorkerConfigError, JobStore | Jobs> =>
  Effect.gen(function*() {
    const o = yield* resolve(options)
    const store = yield* JobStore
    const jobs = yield* Jobs
    const now = yield* Clock.currentTimeMillis
    let reaped = 0
    for (const row of yield* store.stale(now, o.defaultTimeout, o.reapLimit)) {
      const type = Option.map(jobs.get(row.name), (r) => r.type)
      const decision = decideReap(row, {
        idempotent: Option.match(type, { onNone: () => true, onSome: (t) => t.idempotent }),
        backoff: Option.match(type, { onNone: () => DEFAULT_BACKOFF, onSome: (t) => t.backoff })
      }, now)
      if (yield* store.reap(row, decision, now, o.defaultTimeout)) {
        reaped++
        yield* Effect.logWarning(`reaped ${row.name} ${row.id}: no sign of life from ${row.claimedBy ?? "?"}; ${decision._tag}`).pipe(
          Effect.annotateLogs({ jobId: row.id, jobName: row.name, attempt: row.attempts })
        )
      }
    }
    return reaped
  })

/** Whether `host` is draining now; an unreadable hosts table counts as draining (fails closed). */
const drainState = (store: JobStore["Type"], host: string, now: number) =>
  Effect.matchEffect(store.getHost(host), {
    onFailure: (error) =>
      Effect.as(Effect.logWarning("hosts table unreadable; starting nothing until it is", error), Option.some<number | null>(null)),
    onSuccess: (row) =>
      Effect.succeed(
        Option.isSome(row) && row.value.draining && (row.value.drainExpiresAt === null || row.value.drainExpiresAt > now)
          ? Option.some(row.value.drainExpiresAt)
          : Option.none()
      )
  })

/** Logs a lease found taken over at the end of a run, naming both owners. */
const warnLeaseLost = (name: string, token: string) =>
  Effect.gen(function*() {
    const leases = yield* JobLeases
    const holder = Option.getOrNull(Option.map(yield* Effect.orElseSucceed(leases.read(name), () => Option.none()), (r) => r.owner))
    yield* Effect.logWarning(
      `lease ${name} was lost before the run ended: held by ${holder ?? "nobody"}, not by this attempt (${token}); ` +
        "the run may have overlapped another"
    )
  })

/**
 * Writes an attempt's outcome, fenced on its claim token, and with `lease` releases that lease
 * and hands off to the next job waiting on it (one statement on PostgreSQL). A lease found taken
 * over is logged with both owners and reported as `leaseLost`.
 */
const finishAttempt = (job: JobRow, outcome: Outcome, lease: string | undefined) =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const now = yield* Clock.currentTimeMillis
    const token = job.claimToken!
    const finished = yield* store.finish({ id: job.id, token, now, outcome, lease })
    if (lease !== undefined && finished.lease === "lost") yield* warnLeaseLost(lease, token)
    if (lease !== undefined && finished.lease === "unknown") {
      yield* Effect.logInfo(`lease ${lease}: after a lost connection it cannot be told whether the release took; it expires by itself`)
    }
    return { written: finished.written, leaseLost: finished.lease === "lost" }
  })

/**
 * Records a failed attempt: retry with backoff while retries remain, else dead; fenced on the
 * token. With `lease`, the lease is released in the same step.
 */
const recordFailure = (job: JobRow, backoff: BackoffOptions, error: string, lease: string | undefined) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const decision = decideFailure(job, backoff, now)
    const message = cutError(error)
    const outcome: Outcome = decision._tag === "Retry"
      ? { _tag: "Retry", runAt: decision.runAt, error: message }
      : { _tag: "Kill", error: message }
    const { leaseLost, written } = yield* finishAttempt(job, outcome, lease)
    if (!written) {
      yield* Effect.logWarning(`attempt fenced: its claim was reaped and re-claimed; its failure was not recorded (${message})`)
      return ProcessResult.Fenced({ job: jobRef(job), leaseLost })
    }
    yield* Effect.logWarning(
      decision._tag === "Retry"
        ? `attempt failed; retrying at ${new Date(decision.runAt).toISOString()}: ${message}`
        : `attempt failed; retries used up, job is dead: ${message}`
    )
    return ProcessResult.Failed({
      job: jobRef(job),
      error: message,
      willRetry: decision._tag === "Retry",
      retryAt: decision._tag === "Retry" ? decision.runAt : null,
      leaseLost
    })
  })

/** Runs perform for a claimed job with its context, lease renewal and timeout. */
const perform = (job: JobRow, registered: RegisteredJob, payload: unknown, host: string, held: HeldLease | undefined) =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const leases = yield* JobLeases
    const type = registered.type
    const token = job.claimToken!
    const leaseRef = yield* Ref.make(Option.fromNullable(held))
    const lost = yield* Deferred.make<never, LeaseLostError>()
    const lostLogged = yield* Ref.make(false)

    const renewLease = (now: number) =>
      Effect.gen(function*() {
        const current = yield* Ref.get(leaseRef)
        if (Option.isNone(current)) return
        const lease = current.value
        const expiresAt = leaseExpiresAt(now, job.claimTimeout)
        const renewed = yield* Effect.either(leases.renew({ name: lease.name, owner: token, expiresAt }))
        if (Either.isLeft(renewed)) {
          // A lock-table hiccup must not fail the job: the release at the end will tell.
          return yield* Effect.logWarning(`lease ${lease.name} renewal failed; carrying on`, renewed.left)
        }
        if (renewed.right) return yield* Ref.set(leaseRef, Option.some({ ...lease, expiresAt }))
        if (yield* Ref.getAndSet(lostLogged, true)) return
        const holder = Option.getOrNull(Option.map(yield* Effect.orElseSucceed(leases.read(lease.name), () => Option.none()), (r) => r.owner))
        yield* Effect.logWarning(
          `lease ${lease.name} was lost: now held by ${holder ?? "nobody"}, not by this attempt (${token}); ` +
            (type.onLeaseLost === "interrupt" ? "interrupting perform" : "perform carries on")
        )
        if (type.onLeaseLost === "interrupt") {
          yield* Deferred.fail(lost, new LeaseLostError({ leaseName: lease.name, owner: token, holder }))
          // perform must not go on past this heartbeat: wait here to be interrupted.
          return yield* Effect.never
        }
      })

    const context: JobContextApi = {
      jobId: job.id,
      name: job.name,
      queue: job.queue,
      attempt: job.attempts,
      claimToken: token,
      host,
      lease: Ref.get(leaseRef),
      heartbeat: Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        // A fenced attempt stops before it renews anything.
        if (!(yield* store.heartbeat(job.id, token, now))) {
          return yield* new Fenced({ jobId: job.id, name: job.name, attempt: job.attempts })
        }
        yield* renewLease(now)
      })
    }

    const seconds = job.claimTimeout ?? type.timeoutSeconds
    const run = registered.perform(payload).pipe(Effect.provideService(JobContext, context))
    const guarded = type.onLeaseLost === "interrupt" && held !== undefined ? Effect.raceFirst(run, Deferred.await(lost)) : run
    // disconnect: on timeout we return at once even if perform ignores interruption; it may
    // still be running, which is why a timed-out attempt leaves its lease to expire.
    return yield* guarded.pipe(
      Effect.disconnect,
      Effect.timeoutFail({ duration: Duration.seconds(seconds), onTimeout: () => new JobTimeoutError({ seconds }) }),
      Effect.exit
    )
  })

/** Runs one claimed job to its outcome. */
const runClaimed = (job: JobRow, o: Resolved): Effect.Effect<ProcessResult, SqlError, WorkerServices> =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const leases = yield* JobLeases
    const jobs = yield* Jobs
    const token = job.claimToken!

    const registered = jobs.get(job.name)
    if (Option.isNone(registered)) {
      return yield* recordFailure(job, DEFAULT_BACKOFF, describe(Cause.fail(new UnknownJobTypeError({ name: job.name }))), undefined)
    }
    const type = registered.value.type
    const decoded = yield* Effect.either(
      Effect.flatMap(
        Effect.try({ try: () => JSON.parse(job.payload) as unknown, catch: (e) => String(e) }),
        (json) => Effect.mapError(Schema.decodeUnknown(type.schema)(json), (e) => e.message)
      )
    )
    if (Either.isLeft(decoded)) {
      const error = new PayloadError({ jobName: job.name, reason: `stored payload no longer decodes: ${decoded.left}` })
      return yield* recordFailure(job, type.backoff, describe(Cause.fail(error)), undefined)
    }
    const payload = decoded.right

    // The lease, taken after the claim and before perform. The key function may throw on a
    // stored payload (another version of the app enqueued it): that fails the attempt.
    const named = yield* Effect.either(Effect.try({
      try: () => leaseNameFor(type.name, type.lease, payload),
      catch: (e) => `concurrencyKeyFor threw: ${String(e)}`
    }))
    if (Either.isLeft(named)) return yield* recordFailure(job, type.backoff, named.left, undefined)
    const leaseName = named.right
    let held: HeldLease | undefined
    if (leaseName !== undefined) {
      const now = yield* Clock.currentTimeMillis
      const expiresAt = leaseExpiresAt(now, job.claimTimeout)
      const acquired = yield* Effect.either(
        Effect.zipRight(ensureLockTable(leases), leases.tryAcquire({ name: leaseName, owner: token, host: o.host, now, expiresAt }))
      )
      if (Either.isLeft(acquired)) {
        return yield* recordFailure(job, type.backoff, describe(Cause.fail(acquired.left)), undefined)
      }
      if (!acquired.right) {
        // Busy: perform does not run; the job waits, its attempt given back.
        const holder = yield* Effect.orElseSucceed(leases.read(leaseName), () => Option.none())
        const delay = busyDelaySeconds(Option.getOrUndefined(Option.map(holder, (h) => h.expiresAt)), now)
        const retryAt = now + delay * 1000
        const holderOwner = Option.getOrNull(Option.map(holder, (h) => h.owner))
        if (!(yield* store.defer(job.id, token, now, retryAt, leaseName))) {
          return ProcessResult.Fenced({ job: jobRef(job), leaseLost: false })
        }
        // The holder may have released (and found no waiter to hand off to) between our
        // tryAcquire and the defer: look again, and if the lease is free, hand off now.
        const after = yield* Effect.orElseSucceed(leases.read(leaseName), () => Option.none())
        if (Option.isNone(after) || isExpired(after.value.expiresAt, yield* Clock.currentTimeMillis)) {
          yield* Effect.ignoreLogged(store.handOff(leaseName, yield* Clock.currentTimeMillis))
        }
        yield* Effect.logDebug(`lease ${leaseName} busy (held by ${holderOwner ?? "nobody"}); deferred ${delay} s`)
        return ProcessResult.Deferred({ job: jobRef(job), leaseName, retryAt, holder: holderOwner })
      }
      held = { name: leaseName, owner: token, expiresAt }
    }

    const exit = yield* perform(job, registered.value, payload, o.host, held).pipe(
      Effect.annotateLogs(leaseName === undefined ? {} : { leaseName })
    )
    const timedOut = Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), (e) => e instanceof JobTimeoutError)
    const fencedInside = Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), (e) => e instanceof Fenced)

    // Record the outcome, fenced on the claim token. The lease goes with it, except after a
    // timeout: perform may still be running, so the lease is left to expire.
    const release = timedOut ? undefined : held?.name
    let result: ProcessResult
    if (fencedInside) {
      yield* Effect.logWarning("attempt fenced: perform stopped on a fenced heartbeat; nothing recorded")
      result = ProcessResult.Fenced({ job: jobRef(job), leaseLost: false })
      if (release !== undefined) result = yield* releaseFenced(job, release, result)
    } else if (Exit.isSuccess(exit)) {
      const { leaseLost, written } = yield* finishAttempt(job, { _tag: "Complete" }, release)
      if (written) {
        yield* Effect.logDebug("completed")
        result = ProcessResult.Completed({ job: jobRef(job), leaseLost })
      } else {
        yield* Effect.logWarning("attempt fenced: it finished, but its claim had been reaped and re-claimed; nothing recorded")
        result = ProcessResult.Fenced({ job: jobRef(job), leaseLost })
      }
    } else {
      result = yield* recordFailure(job, type.backoff, describe(exit.cause), release)
    }

    // A timed-out run whose lease was already taken over is still a possible overlap: report it.
    if (held !== undefined && timedOut) {
      const owner = yield* Effect.orElseSucceed(leases.ownerOf(held.name), () => Option.some(token))
      if (!Option.contains(owner, token)) {
        yield* Effect.logWarning(
          `lease ${held.name} was lost before the run timed out: held by ${Option.getOrNull(owner) ?? "nobody"}, ` +
            `not by this attempt (${token}); the run may have overlapped another`
        )
        result = withLeaseLost(result)
      }
    }
    return result
  }).pipe(Effect.annotateLogs({ jobId: job.id, jobName: job.name, attempt: job.attempts }))

/** A fenced attempt writes no outcome but still gives its lease back (owner-fenced) and hands off. */
const releaseFenced = (job: JobRow, name: string, result: ProcessResult) =>
  Effect.gen(function*() {
    const leases = yield* JobLeases
    const store = yield* JobStore
    const token = job.claimToken!
    const released = yield* Effect.either(leases.release({ name, owner: token }))
    if (Either.isLeft(released)) {
      yield* Effect.logWarning(`lease ${name} release failed; it will expire`, released.left)
      return result
    }
    if (released.right) {
      yield* Effect.ignoreLogged(store.handOff(name, yield* Clock.currentTimeMillis))
      return result
    }
    yield* warnLeaseLost(name, token)
    return withLeaseLost(result)
  })

const withLeaseLost = (r: ProcessResult): ProcessResult =>
  r._tag === "Completed" || r._tag === "Failed" || r._tag === "Fenced" ? { ...r, leaseLost: true } : r

/** Claims one due job and runs it (no reap, no drain check). */
export const claimAndRun = (options: ProcessOptions = {}): Effect.Effect<ProcessResult, SqlError | WorkerConfigError, WorkerServices> =>
  claimThenRun(options, Effect.void)

// claimAndRun with a step between the claim and the run (the worker uses it to wake a peer).
const claimThenRun = (options: ProcessOptions, onClaimed: Effect.Effect<void>) =>
  Effect.gen(function*() {
    const o = yield* resolve(options)
    const store = yield* JobStore
    const now = yield* Clock.currentTimeMillis
    const claimed = yield* store.claim({
      queues: o.queues,
      host: o.host,
      now,
      claimToken: randomUUID(),
      timeoutCap: o.timeoutCap,
      hostCap: o.hostCap
    })
    switch (claimed._tag) {
      case "NothingDue":
        return ProcessResult.Idle()
      case "Capped":
        return ProcessResult.Capped({ running: claimed.running })
      case "Claimed":
        yield* onClaimed
        return yield* runClaimed(claimed.job, o)
    }
  })

/**
 * One turn of the worker: reap, then (unless this host is draining) claim and run one job.
 * Never fails for a job's sake: bad payloads, unknown types and perform errors become outcomes.
 */
export const processNext = (options: ProcessOptions = {}): Effect.Effect<ProcessResult, SqlError | WorkerConfigError, WorkerServices> =>
  Effect.gen(function*() {
    const o = yield* resolve(options)
    const store = yield* JobStore
    const now = yield* Clock.currentTimeMillis
    const draining = yield* drainState(store, o.host, now)
    yield* reap(options)
    if (Option.isSome(draining)) return ProcessResult.Draining({ until: draining.value })
    return yield* claimAndRun(options)
  })

/** Adds one outcome to a tally. */
export const tallyOf = (t: QueueTally, r: ProcessResult): QueueTally => {
  switch (r._tag) {
    case "Completed":
      return { ...t, processed: t.processed + 1, leasesLost: t.leasesLost + (r.leaseLost ? 1 : 0) }
    case "Failed":
      return { ...t, failed: t.failed + 1, leasesLost: t.leasesLost + (r.leaseLost ? 1 : 0), errors: [...t.errors, r.error] }
    case "Fenced":
      return { ...t, fenced: t.fenced + 1, leasesLost: t.leasesLost + (r.leaseLost ? 1 : 0) }
    case "Deferred":
      return { ...t, skipped: t.skipped + 1 }
    default:
      return t
  }
}

/** Options of processQueue. */
export interface ProcessQueueOptions extends Omit<ProcessOptions, "queues"> {
  /** One queue, or every queue when omitted. */
  readonly queue?: string | undefined
  /**
   * Stop after this many processed + failed + fenced attempts: a whole number ≥ 0 (default 10;
   * 0 = no limit).
   */
  readonly limit?: number | undefined
  /**
   * Stop starting new attempts after this long: a duration ≥ 0 (0 starts none; an infinite one
   * sets no time limit). NaN, negative or unreadable durations fail with `WorkerConfigError`.
   */
  readonly timeout?: Duration.DurationInput | undefined
}

/** A count option (processQueue's `limit`, tick's `maxJobs`): a whole number ≥ 0, else `WorkerConfigError`. */
const count = (field: string, n: number): Effect.Effect<number, WorkerConfigError> =>
  Number.isSafeInteger(n) && n >= 0
    ? Effect.succeed(n)
    : Effect.fail(new WorkerConfigError({ field, reason: `must be a whole number ≥ 0, got ${n}` }))

/** processQueue's time budget in ms: a duration ≥ 0, or an infinite one (no limit). */
const timeBudget = (timeout: Duration.DurationInput | undefined): Effect.Effect<number, WorkerConfigError> => {
  if (timeout === undefined) return Effect.succeed(Number.POSITIVE_INFINITY)
  const ms = durationMillis(timeout)
  if (Either.isRight(ms)) return Effect.succeed(ms.right)
  // durationMillis refuses infinite durations; here one means no time limit (unless negative).
  const negative = Array.isArray(timeout) && timeout.some((x) => !(x >= 0))
  if (!negative && Option.exists(Duration.decodeUnknown(timeout), (d) => !Duration.isFinite(d))) {
    return Effect.succeed(Number.POSITIVE_INFINITY)
  }
  return Effect.fail(new WorkerConfigError({ field: "timeout", reason: ms.left }))
}

/**
 * Runs processNext until `limit` attempts were processed, failed or fenced, nothing is due, the
 * `timeout` has passed, or the host is capped or draining. Deferred jobs count as skipped, not
 * toward the limit; the loop still ends because a deferred job's run_at moves into the future.
 */
export const processQueue = (options: ProcessQueueOptions = {}): Effect.Effect<QueueTally, SqlError | WorkerConfigError, WorkerServices> =>
  Effect.gen(function*() {
    const limit = yield* count("limit", options.limit ?? 10)
    const budget = yield* timeBudget(options.timeout)
    const next: ProcessOptions = { ...options, queues: options.queue === undefined ? undefined : [options.queue] }
    const started = yield* Clock.currentTimeMillis
    let tally = emptyTally
    let counted = 0
    while (limit === 0 || counted < limit) {
      if ((yield* Clock.currentTimeMillis) - started >= budget) break
      const result = yield* processNext(next)
      if (result._tag === "Idle" || result._tag === "Capped" || result._tag === "Draining") break
      tally = tallyOf(tally, result)
      if (countsTowardLimit(result._tag)) counted++
    }
    return tally
  })

// ---------------------------------------------------------------------------------------------
// Hosts: drain, resume, status, tick

/**
 * When a drain of `expiresIn` from `now` ends (epoch ms, rounded up to a whole ms), or null for
 * no expiry (none, ≤ 0 or infinite). NaN, an unreadable duration, or an end past the largest
 * exact epoch-ms value fail with `WorkerConfigError`.
 */
const drainEnd = (expiresIn: Duration.DurationInput | undefined, now: number): Effect.Effect<number | null, WorkerConfigError> => {
  if (expiresIn === undefined) return Effect.succeed(null)
  const refuse = (reason: string) => Effect.fail(new WorkerConfigError({ field: "expiresIn", reason }))
  // Duration reads a NaN (or a tuple holding one) as zero, which would mean "no expiry".
  if (Number.isNaN(expiresIn) || (Array.isArray(expiresIn) && expiresIn.some((x) => Number.isNaN(x)))) {
    return refuse(`must not be NaN, got ${String(expiresIn)}`)
  }
  const decoded = Duration.decodeUnknown(expiresIn)
  if (Option.isNone(decoded)) return refuse(`is not a duration: ${String(expiresIn)}`)
  if (!Duration.isFinite(decoded.value)) return Effect.succeed(null)
  const ms = Duration.toMillis(decoded.value)
  if (ms <= 0) return Effect.succeed(null)
  const until = now + Math.ceil(ms)
  return Number.isSafeInteger(until) ? Effect.succeed(until) : refuse(`is too large: ${String(expiresIn)}`)
}

/**
 * Marks `host` draining: it still reaps but starts nothing. `expiresIn` ≤ 0, infinite or none:
 * no expiry; NaN, unreadable or too large (now + it past the largest exact epoch-ms value):
 * `WorkerConfigError`, nothing written.
 */
export const drain = (
  options: { readonly host?: string | undefined; readonly expiresIn?: Duration.DurationInput | undefined } = {}
): Effect.Effect<void, SqlError | WorkerConfigError, JobStore> =>
  Effect.gen(function*() {
    const { host } = yield* resolve(options)
    const store = yield* JobStore
    const now = yield* Clock.currentTimeMillis
    yield* store.drain(host, now, yield* drainEnd(options.expiresIn, now))
  })

/** Lifts a drain on `host`. */
export const resume = (options: { readonly host?: string | undefined } = {}): Effect.Effect<void, SqlError | WorkerConfigError, JobStore> =>
  Effect.gen(function*() {
    const { host } = yield* resolve(options)
    yield* (yield* JobStore).resume(host, yield* Clock.currentTimeMillis)
  })

/** What tick did. A deferral is never counted as a failure. */
export interface TickResult {
  readonly host: string
  readonly processed: number
  readonly failed: number
  readonly fenced: number
  readonly deferred: number
  readonly leasesLost: number
  readonly reaped: number
  readonly capped: boolean
  readonly draining: boolean
}

/**
 * One scheduled run (for cron-style hosting): refresh the host row, reap, process up to
 * `maxJobs` attempts (a whole number ≥ 0, default 10; deferrals do not count), refresh the host
 * row again.
 */
export const tick = (
  options: ProcessOptions & { readonly maxJobs?: number | undefined; readonly codeVersion?: string | undefined } = {}
): Effect.Effect<TickResult, SqlError | WorkerConfigError, WorkerServices> =>
  Effect.gen(function*() {
    const o = yield* resolve(options)
    const maxJobs = yield* count("maxJobs", options.maxJobs ?? 10)
    const store = yield* JobStore
    const touch = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      store.touchHost(o.host, now, { maxConcurrent: o.hostCap ?? 0, codeVersion: options.codeVersion ?? null }))
    yield* touch
    const reaped = yield* reap(options)
    let result: TickResult = { host: o.host, processed: 0, failed: 0, fenced: 0, deferred: 0, leasesLost: 0, reaped, capped: false, draining: false }
    const draining = yield* drainState(store, o.host, yield* Clock.currentTimeMillis)
    if (Option.isSome(draining)) {
      result = { ...result, draining: true }
    } else {
      let counted = 0
      while (counted < maxJobs) {
        const r = yield* claimAndRun(options)
        if (r._tag === "Idle") break
        if (r._tag === "Capped") {
          result = { ...result, capped: true }
          break
        }
        const lost = "leaseLost" in r && r.leaseLost ? 1 : 0
        if (r._tag === "Completed") result = { ...result, processed: result.processed + 1, leasesLost: result.leasesLost + lost }
        if (r._tag === "Failed") result = { ...result, failed: result.failed + 1, leasesLost: result.leasesLost + lost }
        if (r._tag === "Fenced") result = { ...result, fenced: result.fenced + 1, leasesLost: result.leasesLost + lost }
        if (r._tag === "Deferred") result = { ...result, deferred: result.deferred + 1 }
        if (countsTowardLimit(r._tag)) counted++
      }
    }
    yield* touch
    return result
  })

// ---------------------------------------------------------------------------------------------
// The long-running worker

/** Options of the long-running worker. */
export interface WorkerConfig extends ProcessOptions {
  /** Attempts run at once in this process: a whole number from 1 to 1,000 (default 4). */
  readonly concurrency?: number | undefined
  /** How long an idle fiber waits before looking again, unless woken (default 1 s). */
  readonly pollInterval?: Duration.DurationInput | undefined
  /** How often stale rows are reaped (default 15 s). */
  readonly reapInterval?: Duration.DurationInput | undefined
  /** On shutdown, how long running attempts may finish before they are interrupted (default 30 s). */
  readonly gracePeriod?: Duration.DurationInput | undefined
  /** Recorded on the host row. */
  readonly codeVersion?: string | undefined
  /** Called with every outcome (progress displays, tests). */
  readonly onResult?: ((result: ProcessResult) => Effect.Effect<void>) | undefined
}

/** What a running worker reports (`skipped` counts deferrals on busy leases). */
export interface WorkerStats extends QueueTally {
  readonly host: string
  readonly running: number
  readonly reaped: number
  /** Wake-ups by notification (PostgreSQL LISTEN/NOTIFY) rather than by polling. */
  readonly notified: number
}

/** A running worker. */
export interface WorkerApi {
  readonly host: string
  readonly stats: Effect.Effect<WorkerStats>
  /** Wakes an idle fiber now (as a notification would); one that finds work wakes another. */
  readonly wake: Effect.Effect<void>
}

/** The running worker service, present while its layer's scope is open. */
export class WorkerHandle extends Context.Tag("leasehold/Worker")<WorkerHandle, WorkerApi>() {}

/**
 * Runs a worker for as long as the layer's scope is open: `concurrency` fibers claim and run
 * jobs, a reaper runs every `reapInterval`, and the host row is refreshed. Idle fibers poll, and
 * on PostgreSQL (with a `PgClient` in context) wake at once on LISTEN/NOTIFY.
 *
 * When the scope closes (including on SIGINT/SIGTERM under `NodeRuntime.runMain`), the worker
 * stops claiming, lets running attempts finish within `gracePeriod`, then interrupts them; an
 * interrupted attempt is reaped and retried later under the normal rules, and its lease expires.
 */
export const make = (config: WorkerConfig = {}): Effect.Effect<WorkerApi, WorkerConfigError, WorkerServices | Scope.Scope> =>
  Effect.gen(function*() {
    const o = yield* resolve(config)
    const store = yield* JobStore
    const concurrency = config.concurrency ?? 4
    if (!Number.isSafeInteger(concurrency) || concurrency < 1 || concurrency > MAX_CONCURRENCY) {
      return yield* new WorkerConfigError({ field: "concurrency", reason: `must be a whole number from 1 to ${MAX_CONCURRENCY}, got ${concurrency}` })
    }
    const duration = (field: string, d: Duration.DurationInput) =>
      Option.match(Option.filter(Duration.decodeUnknown(d), (x) => Duration.isFinite(x) && Duration.toMillis(x) > 0 && !(typeof d === "number" && !(d > 0))), {
        onNone: () => Effect.fail(new WorkerConfigError({ field, reason: `must be a positive, finite duration, got ${String(d)}` })),
        onSome: Effect.succeed
      })
    const poll = yield* duration("pollInterval", config.pollInterval ?? "1 second")
    const reapEvery = yield* duration("reapInterval", config.reapInterval ?? "15 seconds")
    const grace = yield* duration("gracePeriod", config.gracePeriod ?? "30 seconds")
    const options: ProcessOptions = { ...config, host: o.host }

    const stats = yield* Ref.make<WorkerStats>({ ...emptyTally, host: o.host, running: 0, reaped: 0, notified: 0 })
    const stopping = yield* Ref.make(false)
    // The doorbell: a ring wakes one idle fiber (a notification means about one job came due),
    // and a fiber woken by it that claims a job rings again, so a burst wakes fibers one by one
    // while a single hand-off wakes one fiber, not all. At most `concurrency` rings wait, so
    // rings while every fiber is busy cost at most that many empty claims later.
    const bell = yield* Queue.dropping<void>(concurrency)
    const ring = Effect.asVoid(Queue.offer(bell, undefined))
    // Returns whether a ring (rather than the poll interval) ended the wait. The stop sets the
    // flag before it rings every fiber, so a fiber that read the flag unset still gets a ring.
    const idle = Effect.flatMap(Ref.get(stopping), (stop) =>
      stop ? Effect.succeed(false) : Effect.race(Effect.as(Queue.take(bell), true), Effect.as(Effect.sleep(poll), false)))

    const touch = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      store.touchHost(o.host, now, { maxConcurrent: o.hostCap ?? 0, codeVersion: config.codeVersion ?? null }))
    yield* Effect.ignoreLogged(touch)
    // Claims and attempts in flight in this process.
    const running = (delta: number) =>
      Effect.zipRight(Ref.update(stats, (s) => ({ ...s, running: s.running + delta })), Metric.incrementBy(Metrics.running, delta))

    const record = (result: ProcessResult, ms: number) =>
      Effect.gen(function*() {
        yield* Ref.update(stats, (s) => ({ ...s, ...tallyOf(s, result) }))
        yield* Metric.update(Metrics.duration, ms)
        switch (result._tag) {
          case "Completed":
            yield* Metric.increment(Metrics.completed)
            break
          case "Failed":
            yield* Metric.increment(result.willRetry ? Metrics.retried : Metrics.failed)
            break
          case "Fenced":
            yield* Metric.increment(Metrics.fenced)
            break
          case "Deferred":
            yield* Metric.increment(Metrics.deferred)
            break
        }
        if ("leaseLost" in result && result.leaseLost) yield* Metric.increment(Metrics.leasesLost)
        if (config.onResult) yield* config.onResult(result)
      })

    // Drain state is read once per loop turn of each fiber at most every poll interval.
    const drainCache = yield* Ref.make<{ readonly at: number; readonly draining: boolean }>({ at: -Infinity, draining: false })
    const isDraining = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const cached = yield* Ref.get(drainCache)
      if (now - cached.at < Duration.toMillis(poll)) return cached.draining
      const draining = Option.isSome(yield* drainState(store, o.host, now))
      yield* Ref.set(drainCache, { at: now, draining })
      return draining
    })

    const loop = Effect.gen(function*() {
      let woken = false
      while (!(yield* Ref.get(stopping))) {
        if (yield* isDraining) {
          yield* idle
          continue
        }
        const started = yield* Clock.currentTimeMillis
        // Woken and found work: there may be more, so wake one more fiber.
        const onClaimed = woken ? ring : Effect.void
        woken = false
        const result = yield* Effect.acquireUseRelease(running(1), () => claimThenRun(options, onClaimed), () => running(-1)).pipe(
          // A database hiccup (or the database is gone): log, wait a poll, carry on. Defects
          // too: a ROLLBACK on a broken connection dies inside @effect/sql, and a loop fiber
          // that died would silently stop claiming. Only an interruption ends the loop.
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.failCause(cause)
              : Effect.as(Effect.logWarning("claim failed; retrying after the poll interval", cause), ProcessResult.Idle())
          )
        )
        if (result._tag === "Idle" || result._tag === "Capped") {
          woken = yield* idle
          continue
        }
        yield* record(result, (yield* Clock.currentTimeMillis) - started)
      }
    })

    const fibers = yield* Effect.forEach(Array.from({ length: concurrency }), () => Effect.forkDaemon(loop), {
      concurrency: "unbounded"
    })

    const reaper = yield* Effect.forkDaemon(
      Effect.repeat(
        Effect.gen(function*() {
          const n = yield* Effect.orElseSucceed(Effect.tapError(reap(options), (e) => Effect.logWarning("reap failed", e)), () => 0)
          if (n > 0) {
            yield* Ref.update(stats, (s) => ({ ...s, reaped: s.reaped + n }))
            yield* Metric.incrementBy(Metrics.reaped, n)
            yield* Effect.repeatN(ring, Math.min(n, concurrency) - 1)
          }
          yield* Effect.ignoreLogged(touch)
        }),
        Schedule.spaced(reapEvery)
      )
    )

    // PostgreSQL: wake on notifications; the listener reconnects by itself if dropped.
    const pgClient = yield* Effect.serviceOption(PgClient.PgClient)
    const listener = Option.isSome(pgClient)
      ? Option.some(yield* Effect.forkDaemon(
        Stream.runForEach(listenForever(listenConfig(pgClient.value.config), store.tables.channel), () =>
          Effect.zipRight(Ref.update(stats, (s) => ({ ...s, notified: s.notified + 1 })), ring))
      ))
      : Option.none()

    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Ref.set(stopping, true)
        yield* Queue.offerAll(bell, Array.from({ length: concurrency }, () => undefined))
        yield* Fiber.interrupt(reaper)
        if (Option.isSome(listener)) yield* Fiber.interrupt(listener.value)
        // Finalizers run uninterruptibly: the wait must be made interruptible for the timeout to cut it.
        const finished = yield* Effect.timeout(Effect.interruptible(Fiber.awaitAll(fibers)), grace).pipe(Effect.option)
        if (Option.isNone(finished)) {
          yield* Effect.logWarning(`worker ${o.host}: attempts still running after the grace period; interrupting them (they will be reaped and retried)`)
          yield* Fiber.interruptAll(fibers)
        }
        yield* Effect.logInfo(`worker ${o.host} stopped`)
      })
    )
    yield* Effect.logInfo(`worker ${o.host} started: ${concurrency} fibers, queues ${o.queues?.join(", ") ?? "all"}`)

    return WorkerHandle.of({
      host: o.host,
      stats: Ref.get(stats),
      wake: ring
    })
  })

/** The long-running worker as a scoped layer; see `make`. */
export const layer = (config: WorkerConfig = {}): Layer.Layer<WorkerHandle, WorkerConfigError, WorkerServices> =>
  Layer.scoped(WorkerHandle, make(config))

const listenConfig = (c: PgClient.PgClientConfig) => ({
  connectionString: c.url === undefined ? undefined : Redacted.value(c.url),
  host: c.host,
  port: c.port,
  user: c.username,
  password: c.password === undefined ? undefined : Redacted.value(c.password),
  database: c.database
})
