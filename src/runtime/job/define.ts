/**
 * Job types (docs/behaviour.md §4): what an app declares for one (`JobDefinition`), and `define`,
 * which checks every option once, at definition time, and resolves it to a value (`JobType`).
 */
import { type Duration, type Effect, Either, ParseResult, Schema } from "effect"
import { parseDurationMillis } from "../../core/duration.ts"
import { JobDefinitionError } from "../../core/errors.ts"
import { isInt32, keyProblem, MAX_INT32, MIN_INT32, textProblem } from "../../core/input.ts"
import {
  type BackoffOptions,
  DEFAULT_BACKOFF,
  MAX_BACKOFF_SECONDS,
  MAX_NAME_LENGTH,
  MAX_TIMEOUT_SECONDS
} from "../../core/jobs.ts"
import { type LeaseOptions, MAX_CONCURRENCY_LIMIT } from "../../core/lease.ts"
import { MAX_RATE_LIMIT, MAX_RATE_PERIOD_MS, type RateLimit } from "../../core/rate.ts"
import { type CronSchedule, DEFAULT_TIME_ZONE, parseCronSchedule, type ScheduleOptions } from "../../core/schedules.ts"
import type { JobContext } from "./context.ts"

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
  /**
   * How many jobs of this type may run at once across all its keys and all workers: a cap over
   * the type besides `concurrencyLimit`'s per key (docs/flow-control.md). 1 to 1000.
   */
  readonly typeConcurrencyLimit?: number | undefined
  /**
   * At most `limit` attempts start in any window of `period`, per key (per type when it has no
   * key), across all workers; up to `limit` may start at once after a quiet period. A job over
   * the limit waits, its attempt given back, until it may start (docs/flow-control.md).
   */
  readonly rateLimit?: { readonly limit: number; readonly period: Duration.DurationInput } | undefined
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
  /** How many of its jobs may run at once in all, if capped. */
  readonly typeConcurrencyLimit?: number | undefined
  /** Its rate limit, if it has one: at most `limit` starts per `periodMs` per key. */
  readonly rateLimit?: RateLimit | undefined
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

/** The milliseconds of a duration input, or why it is not one (see ../../core/duration.ts). */
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
  // An exclusive type's lease `job:x ` could never be taken on MySQL/MariaDB (src/core/input.ts).
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
  const rateLimit = def.rateLimit === undefined ? undefined : checkRateLimit(def.rateLimit, problem)
  const cap = def.typeConcurrencyLimit
  if (cap !== undefined && (!Number.isSafeInteger(cap) || cap < 1 || cap > MAX_CONCURRENCY_LIMIT)) {
    throw problem(
      `typeConcurrencyLimit must be a whole number from 1 to ${MAX_CONCURRENCY_LIMIT}, got ${String(cap)}`
    )
  }
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
    ...(rateLimit === undefined ? {} : { rateLimit }),
    ...(cap === undefined ? {} : { typeConcurrencyLimit: cap }),
    ...(schedule === undefined ? {} : { schedule })
  }
}

/** A rate limit's whole number of starts and its period, checked; else a `JobDefinitionError`. */
const checkRateLimit = (
  options: NonNullable<JobOptions<unknown>["rateLimit"]>,
  problem: (reason: string) => JobDefinitionError
): RateLimit => {
  if (typeof options !== "object" || options === null) throw problem("rateLimit must be { limit, period }")
  const { limit } = options
  if (typeof limit !== "number" || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_RATE_LIMIT) {
    throw problem(`rateLimit.limit must be a whole number from 1 to ${MAX_RATE_LIMIT}, got ${String(limit)}`)
  }
  const period = durationMillis(options.period)
  if (
    Either.isLeft(period) || !Number.isSafeInteger(period.right) || period.right < 1 ||
    period.right > MAX_RATE_PERIOD_MS
  ) {
    throw problem(`rateLimit.period must be a whole number of ms from 1 ms to 1 day, got ${String(options.period)}`)
  }
  return { limit, periodMs: period.right }
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
