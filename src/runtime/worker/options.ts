/**
 * The worker's options (docs/behaviour.md §9), checked once per entry point: a bad value fails
 * with a typed `WorkerConfigError` naming the field, before anything is read or written.
 * Durations are read by src/core/duration.ts, the host's text by src/core/input.ts.
 */
import { Duration, Effect, Either, Option } from "effect"
import { parseDurationMillis, parsePositiveMillis } from "../../core/duration.ts"
import { WorkerConfigError } from "../../core/errors.ts"
import { keyProblem } from "../../core/input.ts"
import { MAX_CONCURRENCY, MAX_TIMEOUT_SECONDS } from "../../core/jobs.ts"
import { isInt32, MAX_INT32 } from "../../core/input.ts"
import { leaseInputProblem } from "../../core/lease.ts"
import { defaultHost } from "../Job.ts"
import { type ResolvedRetention, resolveRetention, type RetentionConfig } from "./maintenance.ts"
import type { ProcessResult } from "./results.ts"

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

/** Options of tick. */
export interface TickOptions extends ProcessOptions {
  /** Most attempts this tick runs: a whole number ≥ 0 (default 10); deferrals do not count. */
  readonly maxJobs?: number | undefined
  /** Recorded on the host row. */
  readonly codeVersion?: string | undefined
}

/** Options of drain. */
export interface DrainOptions {
  readonly host?: string | undefined
  /** How long the drain lasts; ≤ 0, infinite or none: until resumed. */
  readonly expiresIn?: Duration.DurationInput | undefined
}

/** Options of the long-running worker. */
export interface WorkerConfig extends ProcessOptions {
  /** Attempts run at once in this process: a whole number from 1 to 1,000 (default 4). */
  readonly concurrency?: number | undefined
  /** How long an idle worker waits before looking for due jobs again, unless woken (default 1 s). */
  readonly pollInterval?: Duration.DurationInput | undefined
  /** How often stale rows are reaped (default 15 s). */
  readonly reapInterval?: Duration.DurationInput | undefined
  /**
   * On shutdown, how long running attempts may finish before they are interrupted and handed
   * back (default 30 s); an interrupted attempt gets as long again to stop.
   */
  readonly gracePeriod?: Duration.DurationInput | undefined
  /**
   * How long finished jobs and silent hosts are kept before this worker deletes them (default:
   * completed jobs 7 days, dead and cancelled jobs 30 days, hosts an hour); `false`: never
   * (./maintenance.ts).
   */
  readonly retention?: RetentionConfig | false | undefined
  /** Recorded on the host row. */
  readonly codeVersion?: string | undefined
  /** Called with every outcome (progress displays, tests). */
  readonly onResult?: ((result: ProcessResult) => Effect.Effect<void>) | undefined
}

/** `ProcessOptions` once checked, with their defaults filled in. */
export interface Resolved {
  readonly queues: ReadonlyArray<string> | undefined
  readonly host: string
  /** Whole seconds from 1 to `MAX_TIMEOUT_SECONDS`. */
  readonly timeoutCap: number | undefined
  readonly hostCap: number | undefined
  readonly reapLimit: number
}

const refuse = (field: string, reason: string) => new WorkerConfigError({ field, reason })

const orRefuse = <A>(field: string, parsed: Either.Either<A, string>): Effect.Effect<A, WorkerConfigError> =>
  Either.match(parsed, { onLeft: (reason) => Effect.fail(refuse(field, reason)), onRight: Effect.succeed })

/** The timeout cap in whole seconds, rounded up and clamped to [1, MAX_TIMEOUT_SECONDS]. */
const timeoutCapSeconds = (
  d: Duration.DurationInput | undefined
): Effect.Effect<number | undefined, WorkerConfigError> =>
  d === undefined
    ? Effect.succeed(undefined)
    : Effect.map(orRefuse("timeoutCap", parsePositiveMillis(d)), (ms) =>
      Math.min(MAX_TIMEOUT_SECONDS, Math.max(1, Math.ceil(ms / 1000))))

/** Checks the options once; bad values fail with a typed `WorkerConfigError`. */
export const resolve = (o: ProcessOptions): Effect.Effect<Resolved, WorkerConfigError> =>
  Effect.gen(function*() {
    const cap = yield* timeoutCapSeconds(o.timeoutCap)
    if (o.hostCap !== undefined && !(isInt32(o.hostCap) && o.hostCap >= 0)) {
      return yield* refuse("hostCap", `must be a whole number from 0 to ${MAX_INT32}, got ${o.hostCap}`)
    }
    if (o.reapLimit !== undefined && !(Number.isSafeInteger(o.reapLimit) && o.reapLimit >= 1)) {
      return yield* refuse("reapLimit", `must be a whole number ≥ 1, got ${o.reapLimit}`)
    }
    // Asked once per entry point; the long-running worker asks once and keeps it.
    const host = o.host ?? defaultHost()
    // The lock table's length and text rules, and no trailing space: MySQL/MariaDB compare `h`
    // and `h ` as equal (PAD SPACE), which would make one hosts row for two workers.
    const problem = leaseInputProblem("host", host) ?? keyProblem(host)
    if (host.length === 0 || problem !== undefined) return yield* refuse("host", problem ?? "is empty")
    return {
      queues: o.queues,
      host,
      timeoutCap: cap,
      hostCap: o.hostCap,
      reapLimit: o.reapLimit ?? 25
    }
  })

/** A count option (processQueue's `limit`, tick's `maxJobs`): a whole number ≥ 0, else `WorkerConfigError`. */
export const count = (field: string, n: number): Effect.Effect<number, WorkerConfigError> =>
  Number.isSafeInteger(n) && n >= 0
    ? Effect.succeed(n)
    : Effect.fail(refuse(field, `must be a whole number ≥ 0, got ${n}`))

/** processQueue's time budget in ms: a duration ≥ 0, or an infinite one (no limit). */
export const timeBudget = (timeout: Duration.DurationInput | undefined): Effect.Effect<number, WorkerConfigError> =>
  timeout === undefined
    ? Effect.succeed(Number.POSITIVE_INFINITY)
    : orRefuse("timeout", parseDurationMillis(timeout, { infinite: true }))

const hasNaN = (d: Duration.DurationInput): boolean =>
  Number.isNaN(d) || (Array.isArray(d) && d.some((x) => Number.isNaN(x)))

/**
 * When a drain of `expiresIn` from `now` ends (epoch ms, rounded up to a whole ms), or null for
 * no expiry (none, ≤ 0 or infinite). NaN, an unreadable duration, or an end past the largest
 * exact epoch-ms value fail with `WorkerConfigError`.
 */
export const drainEnd = (
  expiresIn: Duration.DurationInput | undefined,
  now: number
): Effect.Effect<number | null, WorkerConfigError> => {
  if (expiresIn === undefined) return Effect.succeed(null)
  const parsed = parseDurationMillis(expiresIn, { infinite: true })
  if (Either.isLeft(parsed)) {
    // The parser refuses negative durations; here ≤ 0 means no expiry (docs/behaviour.md §9).
    // NaN stays refused: Duration would read it as zero, and a typo must not drain for ever.
    const negative = !hasNaN(expiresIn) && Option.isSome(Duration.decodeUnknown(expiresIn))
    return negative ? Effect.succeed(null) : Effect.fail(refuse("expiresIn", parsed.left))
  }
  const ms = parsed.right
  if (ms <= 0 || ms === Number.POSITIVE_INFINITY) return Effect.succeed(null)
  const until = now + Math.ceil(ms)
  return Number.isSafeInteger(until)
    ? Effect.succeed(until)
    : Effect.fail(refuse("expiresIn", `is too large: ${String(expiresIn)}`))
}

/** `WorkerConfig` once checked. */
export interface ResolvedWorker {
  readonly options: Resolved
  readonly concurrency: number
  readonly poll: Duration.Duration
  readonly reapEvery: Duration.Duration
  readonly grace: Duration.Duration
  /** undefined: retention is off. */
  readonly retention: ResolvedRetention | undefined
}

const positive = (field: string, d: Duration.DurationInput): Effect.Effect<Duration.Duration, WorkerConfigError> =>
  Effect.map(orRefuse(field, parsePositiveMillis(d)), Duration.millis)

/** Checks the long-running worker's options once; the process options' errors come first. */
export const resolveWorker = (config: WorkerConfig): Effect.Effect<ResolvedWorker, WorkerConfigError> =>
  Effect.gen(function*() {
    const options = yield* resolve(config)
    const concurrency = config.concurrency ?? 4
    if (!Number.isSafeInteger(concurrency) || concurrency < 1 || concurrency > MAX_CONCURRENCY) {
      return yield* refuse("concurrency", `must be a whole number from 1 to ${MAX_CONCURRENCY}, got ${concurrency}`)
    }
    return {
      options,
      concurrency,
      poll: yield* positive("pollInterval", config.pollInterval ?? "1 second"),
      reapEvery: yield* positive("reapInterval", config.reapInterval ?? "15 seconds"),
      grace: yield* positive("gracePeriod", config.gracePeriod ?? "30 seconds"),
      retention: yield* resolveRetention(config.retention)
    }
  })
