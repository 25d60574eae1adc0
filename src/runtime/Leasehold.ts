/**
 * The services an app composes: the job store and job leases for a table prefix, the registry
 * of its job types, and the worker's wake-ups. Over the app's own `SqlClient` (`layer`) or in
 * memory (`memoryLayer`, for tests and demos). `retryConnect` makes a `SqlClient` layer wait for
 * a database that is down at start-up.
 */
import { Duration, Effect, Layer, Schedule, ScheduleDecision } from "effect"
import { maskCredentials } from "../infra/credentials.ts"
import * as JobStore from "../adapters/sql/JobStore.ts"
import { memoryDatabaseLayer } from "../adapters/memory/database.ts"
import { memoryJobStoreLayer } from "../adapters/memory/JobStore.ts"
import * as WakeupsAdapter from "../adapters/wakeups.ts"
import * as WakeupsPort from "../ports/Wakeups.ts"
import { type AnyJobType, jobsLayer } from "./Job.ts"

/** Options shared by the layers. */
export interface LeaseholdOptions<Types extends ReadonlyArray<AnyJobType>> {
  /** Table prefix (default `leasehold_`): lowercase letters, digits and `_`. */
  readonly prefix?: string | undefined
  /** The job types this process can enqueue and run. */
  readonly jobs: Types
}

/**
 * Services over the app's `SqlClient` (PostgreSQL, MySQL/MariaDB or SQLite). The wake-ups are
 * LISTEN/NOTIFY when that client is a `PgClient`, and none (polling) otherwise.
 */
export const layer = <const Types extends ReadonlyArray<AnyJobType>>(options: LeaseholdOptions<Types>) =>
  // provideMerge: a perform that enqueues other jobs finds the store in its context.
  jobsLayer(...options.jobs).pipe(
    Layer.provideMerge(JobStore.layer({ prefix: options.prefix })),
    Layer.merge(WakeupsAdapter.layer)
  )

/** The same services on a fresh in-memory database (which it also provides); no wake-ups. */
export const memoryLayer = <const Types extends ReadonlyArray<AnyJobType>>(options: LeaseholdOptions<Types>) =>
  jobsLayer(...options.jobs).pipe(
    Layer.provideMerge(memoryJobStoreLayer({ prefix: options.prefix })),
    Layer.provideMerge(memoryDatabaseLayer),
    Layer.merge(Layer.succeed(WakeupsPort.Wakeups, WakeupsPort.none))
  )

// ---------------------------------------------------------------------------------------------
// Waiting for the database at start-up

/** Options of `retryConnect`. */
export interface RetryConnectOptions<E> {
  /** The first delay (default 0.5 s, at least 1 ms); each next one doubles. */
  readonly base?: Duration.DurationInput | undefined
  /** The longest delay (default 30 s). */
  readonly max?: Duration.DurationInput | undefined
  /**
   * Randomise each delay to 80–100 % of its value (default true), so processes started
   * together do not all knock at once; a delay never exceeds `max`.
   */
  readonly jitter?: boolean | undefined
  /**
   * Give up after this many retries (so `maxRetries + 1` attempts in all), failing with the
   * last error. Default: retry for as long as it takes.
   */
  readonly maxRetries?: number | undefined
  /** Retry only the errors this accepts (default: every error); any other fails at once. */
  readonly while?: ((error: E) => boolean) | undefined
  /**
   * Names the database in the log lines, e.g. its URL. Credentials in a URL
   * (`//user:password@`) are masked, here and in error messages.
   */
  readonly label?: string | undefined
}

/** An error's message with those of its causes (`SqlError: driver error`), credentials masked. */
const connectErrorMessage = (error: unknown): string => {
  const messages: Array<string> = []
  let current: unknown = error
  for (let i = 0; i < 6 && current !== undefined && current !== null; i++) {
    // Node reports a refused connection to a name with several addresses as an AggregateError.
    if (current instanceof AggregateError && current.errors.length > 0 && current.message === "") {
      current = current.errors[0]
    }
    if (current === undefined || current === null) break
    const message = typeof current === "string" ? current : (current as { message?: unknown }).message
    if (typeof message === "string" && message !== "" && !messages.some((m) => m.includes(message))) {
      messages.push(message)
    }
    current = (current as { cause?: unknown }).cause
  }
  return maskCredentials(messages.length > 0 ? messages.join(": ") : String(error))
}

const formatDelay = (d: Duration.Duration) => `${(Duration.toMillis(d) / 1000).toFixed(1)}s`

/**
 * The retry policy of `retryConnect` as a Schedule over the layer's errors (usable with
 * `Effect.retry` too): exponential backoff (`base`, doubling, capped at `max`, with jitter),
 * bounded by `maxRetries` if given, and a warning logged for every failed attempt. It outputs
 * the delay before the next attempt.
 */
export const connectSchedule = <E>(options: RetryConnectOptions<E> = {}): Schedule.Schedule<Duration.Duration, E> => {
  const base = Duration.max(Duration.decode(options.base ?? "500 millis"), Duration.millis(1))
  const max = Duration.max(Duration.decode(options.max ?? "30 seconds"), base)
  let policy: Schedule.Schedule<unknown, E> = Schedule.exponential(base, 2).pipe(
    Schedule.modifyDelay((d) => Duration.min(d, max))
  )
  if (options.jitter !== false) policy = Schedule.jitteredWith(policy, { min: 0.8, max: 1 })
  const retries = options.maxRetries
  if (retries !== undefined && retries !== Number.POSITIVE_INFINITY) {
    policy = Schedule.intersect(
      policy,
      Schedule.recurs(Number.isFinite(retries) ? Math.max(0, Math.floor(retries)) : 0)
    )
  }
  if (options.while !== undefined) policy = Schedule.whileInput(policy, options.while)
  const delays = Schedule.delays(policy)
  const what = `cannot connect to the database${
    options.label === undefined ? "" : ` (${maskCredentials(options.label)})`
  }`
  // Counts the failed attempts and logs each with the delay the policy chose.
  return Schedule.makeWithState(
    { state: delays.initial, attempt: 0 },
    (now, error: E, { attempt: previous, state }) =>
      Effect.flatMap(delays.step(now, error, state), ([next, delay, decision]) => {
        const attempt = previous + 1
        const done = ScheduleDecision.isDone(decision)
        const line = `${what}, attempt ${attempt}: ${connectErrorMessage(error)}; ${
          done ? "giving up" : `retrying in ${formatDelay(delay)}`
        }`
        return Effect.as(
          Effect.logWarning(line).pipe(
            Effect.annotateLogs(done ? { attempt } : { attempt, retryInMs: Math.round(Duration.toMillis(delay)) })
          ),
          [{ state: next, attempt }, delay, decision] as const
        )
      })
  )
}

/**
 * Wraps a `SqlClient` layer (or any layer that connects at construction, like
 * `PgClient.layer` and `MysqlClient.layer`, which fail when the server is unreachable) so that
 * building it waits for the database: every failed attempt is logged as a warning —
 * `cannot connect to the database (<label>), attempt <n>: <error message>; retrying in <s>s`,
 * annotated `attempt` and `retryInMs` — and retried after an exponential backoff (0.5 s, 1 s,
 * 2 s … capped at 30 s, each cut by up to 20 % of jitter). Unbounded by default; with
 * `maxRetries` (or a `while` that refuses the error) it fails with the last error, its line
 * ending `; giving up`. Only construction is retried: once built, the layer is the wrapped one,
 * and a worker over it copes with later outages by itself (it logs what fails and carries on).
 *
 * ```ts
 * const Db = Leasehold.retryConnect(PgClient.layer({ url }), { label: "orders db" })
 * const App = Worker.layer().pipe(Layer.provideMerge(Leasehold.layer({ jobs })), Layer.provide(Db))
 * ```
 */
export const retryConnect = <ROut, E, RIn>(
  sqlLayer: Layer.Layer<ROut, E, RIn>,
  options: RetryConnectOptions<E> = {}
): Layer.Layer<ROut, E, RIn> => Layer.retry(sqlLayer, connectSchedule(options))
