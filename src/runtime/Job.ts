/**
 * Job types, the registry that maps names to them, the context a running attempt sees, and
 * enqueue (docs/behaviour.md §4, §7).
 */
import * as LocalWakeups from "../adapters/localWakeups.ts"
import { isTransactionContext } from "../adapters/sql/transaction.ts"
import { Clock, Context, Duration, Effect, Either, FiberRef, Layer, Option, ParseResult, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { hostname } from "node:os"
import {
  type BackoffOptions,
  DEFAULT_BACKOFF,
  MAX_BACKOFF_SECONDS,
  MAX_NAME_LENGTH,
  MAX_TIMEOUT_SECONDS,
  MAX_UNIQUE_KEY_LENGTH
} from "../core/jobs.ts"
import { isInt32, MAX_INT32, MIN_INT32 } from "../core/input.ts"
import { EnqueueInputError, type Fenced, type JobCancelled, JobDefinitionError, PayloadError } from "../core/errors.ts"
import { parseDurationMillis } from "../core/duration.ts"
import { keyProblem, textProblem } from "../core/input.ts"
import {
  leaseInputProblem,
  leaseNameFor,
  type LeaseOptions,
  MAX_CONCURRENCY_LIMIT,
  MAX_LEASE_HOST_LENGTH
} from "../core/lease.ts"
import { type InsertResult, JobStore, type JobStoreApi } from "../ports/JobStore.ts"
import { type NewJob, UNIQUE_UNTIL, type UniqueUntil } from "../core/model.ts"
import { type CronSchedule, DEFAULT_TIME_ZONE, parseCronSchedule, type ScheduleOptions } from "../core/schedules.ts"
import type { SqlError } from "@effect/sql/SqlError"
import { annotateEnqueue, withEnqueueSpan } from "./tracing.ts"
import { setInPlace } from "./inPlace.ts"

/** What a job type may declare besides its name, schema and perform. */
export interface JobOptions<A> extends LeaseOptions<A> {
  /** Queue its jobs go to by default ("default"). */
  readonly queue?: string | undefined
  /** Higher runs first (default 0). */
  readonly priority?: number | undefined
  /** Retries after the first run (default 3): a job runs at most maxRetries + 1 times. */
  readonly maxRetries?: number | undefined
  /** "exponential" (default) or "linear", or the whole shape with base and max seconds. */
  readonly backoff?: BackoffOptions["kind"] | Partial<BackoffOptions> | undefined
  /** How long perform may run (default 300 s). Also sets the lease window and the reaper's grace. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Whether a reaped run may be retried (default true); if not, a reaped job is `interrupted`. */
  readonly idempotent?: boolean | undefined
  /** What a heartbeat that finds the lease lost does: continue (default) or interrupt perform. */
  readonly onLeaseLost?: "continue" | "interrupt" | undefined
  /**
   * How many jobs of one key (or of an exclusive type) may run at once across all workers
   * (default 1: exclusive). N lease slots, each a lease of its own with its own fencing token
   * (docs/behaviour.md §8). Needs `exclusive`, `concurrencyKey` or `concurrencyKeyFor`.
   */
  readonly concurrencyLimit?: number | undefined
  /** Enqueue a job of this type at every slot of a cron expression (docs/behaviour.md §14). */
  readonly schedule?: ScheduleOptions<A> | undefined
}

/** A job type's schedule once checked: its cron and the payload of every scheduled job. */
export interface JobSchedule<A = unknown> extends CronSchedule {
  readonly payload: A
}

/** A job type's definition, as written by the app. */
export interface JobDefinition<Name extends string, A, I, R> extends JobOptions<A> {
  readonly name: Name
  readonly schema: Schema.Schema<A, I, never>
  readonly perform: (payload: A) => Effect.Effect<void, unknown, R | JobContext>
}

/** A job type: its definition with every option resolved to a value. */
export interface JobType<Name extends string = string, A = any, I = any, R = any> {
  readonly name: Name
  readonly schema: Schema.Schema<A, I, never>
  readonly perform: (payload: A) => Effect.Effect<void, unknown, R | JobContext>
  readonly queue: string
  readonly priority: number
  readonly maxRetries: number
  readonly backoff: BackoffOptions
  /** Whole seconds, at least 1. */
  readonly timeoutSeconds: number
  readonly idempotent: boolean
  readonly onLeaseLost: "continue" | "interrupt"
  readonly lease: LeaseOptions<A>
  /** Runs at once per key, at least 1 (1: exclusive). */
  readonly concurrencyLimit: number
  /** Its recurring schedule, if it has one. */
  readonly schedule?: JobSchedule<A> | undefined
}

/** Any job type, whatever its payload and requirements. */
export type AnyJobType = JobType<string, any, any, any>

/** A whole number within an INT column's range and at least `min`, or a `JobDefinitionError`. */
const int32 = (name: string, field: string, value: number, min: number) => {
  if (!isInt32(value) || value < min) {
    throw new JobDefinitionError({
      jobName: name,
      reason: `${field} must be a whole number from ${min} to ${MAX_INT32}, got ${value}`
    })
  }
  return value
}

/** The milliseconds of a duration input, or why it is not one (see ../core/duration.ts). */
export const durationMillis = (input: unknown): Either.Either<number, string> => parseDurationMillis(input)

/**
 * Defines a job type. Throws `JobDefinitionError` at definition time for options that cannot
 * work (a blank name, a negative timeout, …), so a mistake shows when the app starts.
 */
export const define = <const Name extends string, A, I, R = never>(
  def: JobDefinition<Name, A, I, R>
): JobType<Name, A, I, R> => {
  const name = def.name
  const problem = (reason: string) => new JobDefinitionError({ jobName: name, reason })
  if (typeof name !== "string" || name.trim() === "" || name.length > MAX_NAME_LENGTH) {
    throw problem(`the name must be 1 to ${MAX_NAME_LENGTH} characters`)
  }
  // An exclusive type's lease `job:x ` could never be taken on MySQL/MariaDB (./core/input.ts).
  const nameText = keyProblem(name)
  if (nameText !== undefined) throw problem(`the name ${nameText}`)
  const backoff: BackoffOptions = typeof def.backoff === "string"
    ? { ...DEFAULT_BACKOFF, kind: def.backoff }
    : { ...DEFAULT_BACKOFF, ...def.backoff }
  if (backoff.kind !== "exponential" && backoff.kind !== "linear") {
    throw problem(`backoff must be "exponential" or "linear", got ${String(backoff.kind)}`)
  }
  if (
    !(backoff.baseSeconds > 0) || !(backoff.maxSeconds >= backoff.baseSeconds) ||
    !(backoff.maxSeconds <= MAX_BACKOFF_SECONDS)
  ) {
    throw problem(
      `backoff needs 0 < baseSeconds ≤ maxSeconds ≤ ${MAX_BACKOFF_SECONDS}, got ${backoff.baseSeconds} and ${backoff.maxSeconds}`
    )
  }
  const timeoutMs = def.timeout === undefined ? Either.right(300_000) : durationMillis(def.timeout)
  if (Either.isLeft(timeoutMs) || timeoutMs.right <= 0 || timeoutMs.right > MAX_TIMEOUT_SECONDS * 1000) {
    throw problem(`timeout must be positive and at most ${MAX_TIMEOUT_SECONDS} s, got ${String(def.timeout)}`)
  }
  const queue = def.queue ?? "default"
  if (typeof queue !== "string" || queue.length === 0 || queue.length > MAX_NAME_LENGTH) {
    throw problem(`queue must be 1 to ${MAX_NAME_LENGTH} characters`)
  }
  const queueText = keyProblem(queue)
  if (queueText !== undefined) throw problem(`queue ${queueText}`)
  // A static key ends up in a lease name (trimmed, hashed past 100 characters): it must be storable.
  const keyText = def.concurrencyKey === undefined ? undefined : textProblem(def.concurrencyKey)
  if (keyText !== undefined) throw problem(`concurrencyKey ${keyText}`)
  if (def.onLeaseLost !== undefined && def.onLeaseLost !== "continue" && def.onLeaseLost !== "interrupt") {
    throw problem(`onLeaseLost must be "continue" or "interrupt", got ${String(def.onLeaseLost)}`)
  }
  const limit = def.concurrencyLimit ?? 1
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_CONCURRENCY_LIMIT) {
    throw problem(`concurrencyLimit must be a whole number from 1 to ${MAX_CONCURRENCY_LIMIT}, got ${String(limit)}`)
  }
  if (limit > 1 && def.exclusive !== true && def.concurrencyKey === undefined && def.concurrencyKeyFor === undefined) {
    throw problem(
      "concurrencyLimit needs exclusive, concurrencyKey or concurrencyKeyFor: it limits the runs of one key"
    )
  }
  const schedule = def.schedule === undefined ? undefined : checkSchedule(def.schedule, def.schema, problem)
  return {
    name,
    schema: def.schema,
    perform: def.perform,
    queue,
    priority: int32(name, "priority", def.priority ?? 0, MIN_INT32),
    maxRetries: int32(name, "maxRetries", def.maxRetries ?? 3, 0),
    backoff,
    timeoutSeconds: Math.max(1, Math.ceil(timeoutMs.right / 1000)),
    idempotent: def.idempotent ?? true,
    onLeaseLost: def.onLeaseLost ?? "continue",
    lease: { exclusive: def.exclusive, concurrencyKey: def.concurrencyKey, concurrencyKeyFor: def.concurrencyKeyFor },
    concurrencyLimit: limit,
    ...(schedule === undefined ? {} : { schedule })
  }
}

/** A schedule's cron, time zone, catch-up and payload, checked at definition; else a `JobDefinitionError`. */
const checkSchedule = <A, I>(
  options: ScheduleOptions<A>,
  schema: Schema.Schema<A, I, never>,
  problem: (reason: string) => JobDefinitionError
): JobSchedule<A> => {
  if (typeof options !== "object" || options === null) throw problem("schedule must be { cron, … }")
  const parsed = parseCronSchedule(options.cron, options.timeZone ?? DEFAULT_TIME_ZONE, options.catchUp ?? "once")
  if (Either.isLeft(parsed)) throw problem(`schedule: ${parsed.left}`)
  const payload = (options.payload === undefined ? {} : options.payload) as A
  const encoded = Schema.encodeEither(schema)(payload)
  if (Either.isLeft(encoded)) {
    throw problem(
      `schedule: the payload does not fit the schema: ${ParseResult.TreeFormatter.formatErrorSync(encoded.left)}`
    )
  }
  return { ...parsed.right, payload }
}

/** A registered job type, its requirements already provided. */
export interface RegisteredJob {
  readonly type: AnyJobType
  readonly perform: (payload: unknown) => Effect.Effect<void, unknown, JobContext>
  /**
   * `perform` with its `JobContext` as well, both set at once as the context of the fiber it runs
   * in, which is not restored afterwards: it must be the last thing its fiber does (perform's own
   * fiber, src/runtime/worker/perform.ts). Issue 13: each scoped provision was an acquire/release,
   * two context copies and two FiberRef writes per attempt. Optional, so a registry of the app's
   * own still works: without it, the worker sets the context itself.
   */
  readonly run?: (payload: unknown, job: JobContextApi) => Effect.Effect<void, unknown>
}

/** The registry: which job types this worker can run. */
export interface JobsApi {
  readonly get: (name: string) => Option.Option<RegisteredJob>
  readonly names: ReadonlyArray<string>
}

/** The job-type registry service. */
export class Jobs extends Context.Tag("leasehold/Jobs")<Jobs, JobsApi>() {}

type Requirements<T> = T extends JobType<string, any, any, infer R> ? R : never

/**
 * A registry of these job types. Their perform functions' requirements (other than
 * `JobContext`) are taken from the layer's context once, when the layer is built.
 */
export const jobsLayer = <const Types extends ReadonlyArray<AnyJobType>>(
  ...types: Types
): Layer.Layer<Jobs, never, Exclude<Requirements<Types[number]>, JobContext>> =>
  Layer.effect(
    Jobs,
    Effect.gen(function*() {
      const context = yield* Effect.context<Exclude<Requirements<Types[number]>, JobContext>>()
      const byName = new Map<string, RegisteredJob>()
      for (const type of types) {
        if (byName.has(type.name)) throw new JobDefinitionError({ jobName: type.name, reason: "registered twice" })
        // The caller's context merged with the layer's, kept while the caller's stays the same (a
        // worker's attempts all run in one): a merge copies every service, once per attempt before.
        let parentSeen: Context.Context<never> | undefined
        let merged: Context.Context<never> = context
        byName.set(type.name, {
          type,
          perform: (payload) =>
            Effect.provide(type.perform(payload), context) as Effect.Effect<void, unknown, JobContext>,
          // The context read and set on the fiber in place: one step, where reading it and setting
          // it as effects were five per attempt.
          run: (payload, job) =>
            Effect.withFiberRuntime((fiber) => {
              const parent = fiber.currentContext
              if (parent !== parentSeen) {
                parentSeen = parent
                merged = Context.merge(parent, context)
              }
              setInPlace(fiber, FiberRef.currentContext, Context.add(merged, JobContext, job))
              return type.perform(payload) as Effect.Effect<void, unknown>
            })
        })
      }
      return Jobs.of({ get: (name) => Option.fromNullable(byName.get(name)), names: [...byName.keys()] })
    })
  )

/** The lease a running attempt holds. */
export interface HeldLease {
  readonly name: string
  /** The attempt's claim token. */
  readonly owner: string
  /** Epoch ms; moves forward with each heartbeat. */
  readonly expiresAt: number
  /**
   * This acquisition's fencing token: strictly greater than every earlier token of this lease
   * name, so a resource that keeps the highest token it has seen can refuse a stale holder's
   * write (`Fences.guard`; docs/behaviour.md §2). A bigint, exact at any size; `String(token)`
   * hands it to an API or JSON.
   */
  readonly fencingToken: bigint
}

/** What perform can see of its own attempt. */
export interface JobContextApi {
  readonly jobId: string
  readonly name: string
  readonly queue: string
  /** 1 for the first run. */
  readonly attempt: number
  readonly claimToken: string
  readonly host: string
  /** The lease this attempt holds (exclusive jobs and concurrency keys), as of now. */
  readonly lease: Effect.Effect<Option.Option<HeldLease>>
  /**
   * Proof of life: keeps the row from being reaped and renews the lease. Fails `Fenced` when
   * the claim was reaped and re-claimed, and `JobCancelled` when the job was cancelled (stop
   * then: the attempt ends `cancelled`).
   */
  readonly heartbeat: Effect.Effect<void, Fenced | JobCancelled | SqlError>
}

/** The running attempt's context, provided to perform by the worker. */
export class JobContext extends Context.Tag("leasehold/JobContext")<JobContext, JobContextApi>() {}

/**
 * Heartbeat from inside perform (the check-in where a cancelled job stops: it fails with
 * `JobCancelled`); outside a worker it does nothing.
 */
export const heartbeat: Effect.Effect<void, Fenced | JobCancelled | SqlError> = Effect.flatMap(
  Effect.serviceOption(JobContext),
  Option.match({ onNone: () => Effect.void, onSome: (ctx) => ctx.heartbeat })
)

/** Options of one enqueue; defaults come from the job type. */
export interface EnqueueOptions {
  readonly queue?: string | undefined
  readonly priority?: number | undefined
  /** Epoch ms when it becomes due: a whole number ≥ 0 (a time in the past means now). */
  readonly runAt?: number | undefined
  /** Due after this long, ≥ 0 (ignored when runAt is given). */
  readonly delay?: Duration.DurationInput | undefined
  /** At most one job with this key, whatever its status, until purged (≤ 255 characters); see `uniqueUntil`. */
  readonly uniqueKey?: string | undefined
  /**
   * How long the unique key stays taken: until the job is purged ("purged", the default), or
   * until it is finished ("finished": once it completed or died, a new enqueue with the key
   * takes it).
   */
  readonly uniqueUntil?: UniqueUntil | undefined
}

/** What enqueue did. */
export interface EnqueueResult {
  readonly id: string
  readonly status: "pending" | "duplicate"
  readonly duplicate: boolean
}

/** Options of `enqueueMany`: those of `enqueue`, for every job, with a unique key per payload. */
export interface EnqueueManyOptions<A> extends Omit<EnqueueOptions, "uniqueKey"> {
  /** The unique key of each job, from its payload and its index (none when undefined). */
  readonly uniqueKey?: ((payload: A, index: number) => string | undefined) | undefined
}

/** A payload of `enqueueMany` whose unique key was taken. */
export interface EnqueueDuplicate {
  /** Its index in the payloads. */
  readonly index: number
  readonly uniqueKey: string
  /** The id of the job holding the key (an earlier payload's own, when two shared a key). */
  readonly id: string
}

/** What enqueueMany did. */
export interface EnqueueManyResult {
  /** One per payload, in order. */
  readonly jobs: ReadonlyArray<EnqueueResult>
  /** How many jobs were written. */
  readonly inserted: number
  /** The payloads whose unique key was taken, in order. */
  readonly duplicates: ReadonlyArray<EnqueueDuplicate>
}

const inputError = (field: string, reason: string) => Effect.fail(new EnqueueInputError({ field, reason }))
const inputLeft = (field: string, reason: string) => Either.left(new EnqueueInputError({ field, reason }))

/** Thrown by enqueue's JSON replacer on a number JSON cannot hold. */
class NonJsonNumber {
  constructor(readonly value: number) {}
}

/** A schema's encoder and decoder, built once per schema (building one costs more than using it). */
const codecs = new WeakMap<Schema.Schema<any, any, never>, {
  readonly encode: (a: unknown) => Either.Either<unknown, ParseResult.ParseError>
  readonly decode: (u: unknown) => Either.Either<unknown, ParseResult.ParseError>
}>()
const codecOf = <A, I>(schema: Schema.Schema<A, I, never>) => {
  let codec = codecs.get(schema)
  if (codec === undefined) {
    codec = { encode: Schema.encodeEither(schema) as never, decode: Schema.decodeUnknownEither(schema) }
    codecs.set(schema, codec)
  }
  return codec as {
    readonly encode: (a: A) => Either.Either<I, ParseResult.ParseError>
    readonly decode: (u: unknown) => Either.Either<A, ParseResult.ParseError>
  }
}

/**
 * One job checked and turned into a row to insert, at `now`: the payload validated and encoded
 * with the type's Schema (it must decode again from the JSON that is stored), every option and
 * the lease it will take checked. Writes nothing.
 */
const prepare = <A, I, R>(
  type: JobType<string, A, I, R>,
  payload: A,
  options: EnqueueOptions,
  now: number,
  traceContext: string | undefined
): Either.Either<NewJob, PayloadError | EnqueueInputError> =>
  Either.gen(function*() {
    const payloadError = (reason: string) => new PayloadError({ jobName: type.name, reason })
    const encoded = yield* codecOf(type.schema).encode(payload).pipe(
      Either.mapLeft((e) => payloadError(ParseResult.TreeFormatter.formatErrorSync(e)))
    )
    const json = yield* Either.try({
      // NaN and ±Infinity have no JSON form: JSON.stringify would store null in their place.
      try: () =>
        JSON.stringify(encoded, (_key, value: unknown) => {
          if (typeof value === "number" && !Number.isFinite(value)) throw new NonJsonNumber(value)
          return value
        }),
      catch: (e) =>
        payloadError(
          e instanceof NonJsonNumber
            ? `${e.value} has no JSON form (it would be stored as null)`
            : `not JSON-serialisable: ${String(e)}`
        )
    })
    if (json === undefined) return yield* Either.left(payloadError("encodes to nothing"))
    // What is stored must decode again, or every attempt of the job would fail.
    const stored = yield* codecOf(type.schema).decode(JSON.parse(json) as unknown).pipe(
      Either.mapLeft((e) =>
        payloadError(`does not decode again once stored as JSON: ${ParseResult.TreeFormatter.formatErrorSync(e)}`)
      )
    )

    const queue = options.queue ?? type.queue
    if (typeof queue !== "string" || queue.length === 0 || queue.length > MAX_NAME_LENGTH) {
      return yield* inputLeft("queue", `must be 1 to ${MAX_NAME_LENGTH} characters`)
    }
    const priority = options.priority ?? type.priority
    if (!isInt32(priority)) {
      return yield* inputLeft("priority", `must be a whole number from ${MIN_INT32} to ${MAX_INT32}, got ${priority}`)
    }
    if (options.uniqueKey !== undefined) {
      if (typeof options.uniqueKey !== "string") return yield* inputLeft("uniqueKey", "must be a string")
      if (options.uniqueKey.length > MAX_UNIQUE_KEY_LENGTH) {
        return yield* inputLeft(
          "uniqueKey",
          `is ${options.uniqueKey.length} characters; at most ${MAX_UNIQUE_KEY_LENGTH} fit`
        )
      }
      if (options.uniqueKey.length === 0) return yield* inputLeft("uniqueKey", "is empty")
    }
    // Keys compare exactly on every database (a worker for queue `mail` must not claim `mail `).
    for (const [field, value] of [["queue", queue], ["uniqueKey", options.uniqueKey ?? ""]] as const) {
      const text = keyProblem(value)
      if (text !== undefined) return yield* inputLeft(field, text)
    }
    const uniqueUntil = options.uniqueUntil ?? "purged"
    if (!UNIQUE_UNTIL.includes(uniqueUntil)) {
      return yield* inputLeft("uniqueUntil", `must be "purged" or "finished", got ${String(uniqueUntil)}`)
    }
    // The lease the job will take: a key the lock table cannot hold would fail every attempt.
    const leaseName = yield* Either.try({
      try: () => leaseNameFor(type.name, type.lease, stored),
      catch: (e) => new EnqueueInputError({ field: "concurrencyKey", reason: `concurrencyKeyFor threw: ${String(e)}` })
    })
    const leaseProblem = leaseName === undefined ? undefined : leaseInputProblem("name", leaseName)
    if (leaseProblem !== undefined) return yield* inputLeft("concurrencyKey", leaseProblem)

    let runAt = now
    if (options.runAt !== undefined) {
      if (!Number.isSafeInteger(options.runAt) || options.runAt < 0) {
        return yield* inputLeft("runAt", `must be whole epoch ms, at least 0, got ${options.runAt}`)
      }
      runAt = options.runAt
    } else if (options.delay !== undefined) {
      const ms = durationMillis(options.delay)
      if (Either.isLeft(ms)) return yield* inputLeft("delay", ms.left)
      runAt = now + Math.ceil(ms.right)
      if (!Number.isSafeInteger(runAt)) return yield* inputLeft("delay", `is too large: ${String(options.delay)}`)
    }
    const id = randomUUID()
    return {
      id,
      name: type.name,
      queue,
      payload: json,
      priority,
      maxRetries: type.maxRetries,
      claimTimeout: type.timeoutSeconds,
      uniqueKey: options.uniqueKey ?? id,
      uniqueUntil,
      runAt,
      now,
      ...(traceContext === undefined ? {} : { traceContext }),
      ...(leaseName === undefined ? {} : { claimLease: leaseName })
    }
  })

/**
 * Wakes this process's idle workers when a job is due now. Inside a transaction the rows are
 * not visible until the commit, so the ring would find nothing: there the poll (or, on
 * PostgreSQL, the NOTIFY sent on commit) wakes them.
 */
const ringIfDue = (store: JobStoreApi, inserted: ReadonlyArray<NewJob>, now: number, inside: boolean): void => {
  if (!inside && inserted.some((j) => j.runAt <= now)) LocalWakeups.ringNow(store.tables.channel)
}

// The store, the Clock's time and whether the caller is in a transaction, read off the fiber in
// one step (five as effects; an enqueue is on the path of every job's latency, issue 13).
const storeAndNow = Effect.withFiberRuntime((fiber) =>
  Effect.succeed({
    store: Context.get(fiber.currentContext as Context.Context<JobStore>, JobStore),
    now: Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis(),
    inside: isTransactionContext(fiber.currentContext)
  })
) as Effect.Effect<{ readonly store: JobStoreApi; readonly now: number; readonly inside: boolean }, never, JobStore>

const asResult = (r: InsertResult): EnqueueResult => ({
  id: r.id,
  status: r.duplicate ? "duplicate" : "pending",
  duplicate: r.duplicate
})

/**
 * Enqueues a job. The payload is validated and encoded with the type's Schema, and must decode
 * again from the JSON that is stored (NaN, for one, cannot: JSON has no form for it); a bad
 * payload fails with `PayloadError`, a bad option (or a concurrency key the lock table cannot
 * hold) with `EnqueueInputError`, and nothing is written. Inside `sql.withTransaction` the insert
 * joins the caller's transaction. A taken unique key returns the existing job's id.
 */
export const enqueue = <A, I, R>(
  type: JobType<string, A, I, R>,
  payload: A,
  options: EnqueueOptions = {}
): Effect.Effect<EnqueueResult, PayloadError | EnqueueInputError | SqlError, JobStore> =>
  withEnqueueSpan(type.name, options.queue ?? type.queue, (traceContext) =>
    Effect.gen(function*() {
      const { inside, now, store } = yield* storeAndNow
      const job = yield* prepare(type, payload, options, now, traceContext)
      const result = yield* store.insert(job)
      if (traceContext !== undefined) yield* annotateEnqueue("leasehold.job.id", result.id)
      if (!result.duplicate) ringIfDue(store, [job], now, inside)
      return asResult(result)
    }))

/**
 * Enqueues one job per payload, as `enqueue` would, in one transaction (the caller's inside
 * `sql.withTransaction`) with one INSERT per 1,000 jobs. Every payload and option is checked
 * first: one bad payload fails the call with `PayloadError` (its reason names the index) or
 * `EnqueueInputError`, and nothing is written. Unique keys are honoured per job: a payload
 * whose key is taken — by an existing job, or by an earlier payload of the same call — writes
 * nothing and is reported in `duplicates` with the holder's id.
 */
export const enqueueMany = <A, I, R>(
  type: JobType<string, A, I, R>,
  payloads: Iterable<A>,
  options: EnqueueManyOptions<A> = {}
): Effect.Effect<EnqueueManyResult, PayloadError | EnqueueInputError | SqlError, JobStore> =>
  withEnqueueSpan(
    type.name,
    options.queue ?? type.queue,
    (traceContext) => enqueueAll(type, payloads, options, traceContext)
  )

const enqueueAll = <A, I, R>(
  type: JobType<string, A, I, R>,
  payloads: Iterable<A>,
  options: EnqueueManyOptions<A>,
  traceContext: string | undefined
): Effect.Effect<EnqueueManyResult, PayloadError | EnqueueInputError | SqlError, JobStore> =>
  Effect.gen(function*() {
    const { inside, now, store } = yield* storeAndNow
    if (payloads === null || typeof payloads !== "object" || !(Symbol.iterator in payloads)) {
      return yield* inputError("payloads", "must be an array (or another iterable) of payloads")
    }
    const keyOf = options.uniqueKey
    if (keyOf !== undefined && typeof keyOf !== "function") {
      return yield* inputError("uniqueKey", "must be a function of the payload and its index")
    }
    const at = (index: number) => `payloads[${index}]: `
    // Plain loop over Eithers: 20,000 payloads cost no fiber each.
    const jobs: Array<NewJob> = []
    let index = 0
    for (const payload of payloads) {
      const i = index++
      let uniqueKey: string | undefined
      try {
        uniqueKey = keyOf?.(payload, i)
      } catch (e) {
        return yield* inputError("uniqueKey", `${at(i)}the function threw: ${String(e)}`)
      }
      const job = prepare(type, payload, { ...options, uniqueKey }, now, traceContext)
      if (Either.isRight(job)) {
        jobs.push(job.right)
        continue
      }
      // Options shared by every payload fail the same way for each: only a payload's own
      // problems name it.
      const e = job.left
      return yield* Effect.fail(
        e._tag === "PayloadError"
          ? new PayloadError({ jobName: e.jobName, reason: at(i) + e.reason })
          : e.field === "uniqueKey" || e.field === "concurrencyKey"
          ? new EnqueueInputError({ field: e.field, reason: at(i) + e.reason })
          : e
      )
    }
    const results = yield* store.insertMany(jobs)
    const written = jobs.filter((_, i) => !results[i]!.duplicate)
    if (traceContext !== undefined) yield* annotateEnqueue("leasehold.job.count", written.length)
    ringIfDue(store, written, now, inside)
    return {
      jobs: results.map(asResult),
      inserted: written.length,
      duplicates: results.flatMap((r, index) =>
        r.duplicate ? [{ index, uniqueKey: jobs[index]!.uniqueKey, id: r.id }] : []
      )
    }
  })

/** The default host name: this machine's name and process id, fitted to the hosts table. */
export const defaultHost = (): string => `${hostname()}:${process.pid}`.slice(0, MAX_LEASE_HOST_LENGTH)

/** Dead jobs by filter: retry or discard every match, in bounded batches (./deadJobs.ts). */
export { type DeadJobsFilter, discardDead, retryDead } from "./deadJobs.ts"
/** Cancelling jobs: one by id, or by type, queue or status (./cancel.ts). */
export { cancel, type CancelResult, cancelWhere, type CancelWhere } from "./cancel.ts"
