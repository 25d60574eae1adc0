/**
 * How the SQL stores ride out the two failures a statement can meet and survive; the rule is
 * written out in docs/retries.md.
 *
 * - **Transient** (a deadlock victim, a serialization failure, a lock wait timeout): the database
 *   rolled the statement (or its transaction) back whole, so sending it again is always safe.
 *   It is sent again **at once**, at most `TRANSIENT_RETRIES` times: no sleep, so no Clock is
 *   involved and a test on a TestClock that never moves cannot hang on it. On a Galera cluster
 *   (`FailureKinds.transientBackoff`) it waits a random moment first, on the live clock.
 * - **Disconnect** (the connection was lost or refused): the statement may or may not have run,
 *   so only statements fenced against running twice (the end of an attempt) are sent again, on
 *   `reconnectSchedule`. Those waits sleep on the **live** clock, never on the caller's: an
 *   outage lasts real seconds whatever clock a test has installed.
 *
 * Inside the caller's own transaction nothing is retried: the caller's transaction is gone
 * (PostgreSQL aborts it, InnoDB rolls a deadlock victim back whole), so only the caller can
 * decide to run it again.
 */
import { SqlError } from "@effect/sql/SqlError"
import { Clock, Effect, Either, Metric, Schedule } from "effect"
import { inTransactionWith } from "./transaction.ts"

/** How a dialect classifies a driver error. */
export interface FailureKinds {
  /** Rolled back whole: safe to run again. */
  readonly isTransient: (cause: unknown) => boolean
  /** The connection was lost or refused: the statement may or may not have run. */
  readonly isDisconnect: (cause: unknown) => boolean
  /**
   * How long (ms) to wait before sending again a statement rolled back `attempt + 1` times in a
   * row; none: at once. A lock-based database has already picked the winner, and the retry waits
   * on its locks; a Galera cluster certifies optimistically, so retries sent at once meet each
   * other again and only one of them wins each round (src/adapters/mysql/galera.ts).
   */
  readonly transientBackoff?: ((attempt: number) => number) | undefined
}

/** How many times a statement rolled back by a deadlock (or serialization failure) is sent again. */
export const TRANSIENT_RETRIES = 8

/** Statements sent again at once after a deadlock or serialization failure, by purpose. */
export const transientRetries = Metric.counter("leasehold_sql_transient_retries", {
  description: "statements sent again at once after a deadlock or serialization failure"
})

/** Retries that gave up (transient failures past the bound, or a connection that stayed lost), by purpose. */
export const retriesExhausted = Metric.counter("leasehold_sql_retries_exhausted", {
  description: "statement retries that gave up"
})

/**
 * Waits between tries after a lost connection: 0.2 s doubling, at most 5 s apart, 8 tries
 * (about 21 s), well inside the reaper's grace of at least 60 s.
 */
export const reconnectSchedule = Schedule.exponential("200 millis").pipe(
  Schedule.union(Schedule.spaced("5 seconds")),
  Schedule.intersect(Schedule.recurs(8))
)

// One live clock for every reconnect wait, whatever Clock the caller's fiber has.
const liveClock = Clock.make()

/** The driver error inside a `SqlError` (undefined for anything else). */
export const causeOf = (e: unknown): unknown => (e instanceof SqlError ? e.cause : undefined)

const transientLoop = <A, E, R>(
  kinds: FailureKinds,
  purpose: string,
  label: string,
  effect: Effect.Effect<A, E, R>,
  attempt: number
): Effect.Effect<A, E, R> =>
  Effect.catchIf(effect, (e) => e instanceof SqlError && kinds.isTransient(e.cause), (e) => {
    if (attempt >= TRANSIENT_RETRIES) {
      return Effect.zipRight(
        Effect.zipRight(
          Metric.increment(Metric.tagged(retriesExhausted, "purpose", purpose)),
          Effect.logWarning(
            `${label}: rolled back by the database ${attempt + 1} times in a row (${
              (e as SqlError).message
            }); giving up`
          )
        ),
        Effect.fail(e)
      )
    }
    const waitMs = Math.round(kinds.transientBackoff?.(attempt) ?? 0)
    const again = transientLoop(kinds, purpose, label, effect, attempt + 1)
    return Effect.zipRight(
      Effect.zipRight(
        Metric.increment(Metric.tagged(transientRetries, "purpose", purpose)),
        Effect.logDebug(
          `${label}: rolled back by the database (${(e as SqlError).message}); sending it again${
            waitMs > 0 ? ` in ${waitMs} ms` : ""
          } (${attempt + 1}/${TRANSIENT_RETRIES})`
        )
      ),
      // On the live clock, as a reconnect's waits: a test's TestClock never has to move for it.
      waitMs > 0 ? Effect.zipRight(Effect.withClock(Effect.sleep(waitMs), liveClock), again) : again
    )
  })

/**
 * Runs one statement of a transaction whose failure the caller handles itself (a duplicate key,
 * which on MySQL/MariaDB fails the INSERT but leaves the transaction open), as an Either. A
 * transient failure or a lost connection still fails: the database has rolled the whole
 * transaction back, and on MySQL/MariaDB every later statement on the connection would run
 * outside it, each committing on its own, so only running the transaction again from its start
 * (`retryTransient`) is safe.
 */
export const eitherInTransaction = <A>(
  kinds: FailureKinds,
  statement: Effect.Effect<A, SqlError>
): Effect.Effect<Either.Either<A, SqlError>, SqlError> =>
  Effect.flatMap(
    Effect.either(statement),
    (result) =>
      Either.isLeft(result) && (kinds.isTransient(result.left.cause) || kinds.isDisconnect(result.left.cause))
        ? Effect.fail(result.left)
        : Effect.succeed(result)
  )

/**
 * Runs `effect` (one statement, or one transaction the store opens itself) and sends it again
 * at once when the database rolled it back as a deadlock victim or serialization failure.
 * `purpose` names it in logs and metrics ("claim", "complete", …).
 */
export const retryTransient = <A, E, R>(
  kinds: FailureKinds,
  purpose: string,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  inTransactionWith((inside) => (inside ? effect : transientLoop(kinds, purpose, purpose, effect, 0)))

/**
 * For statements fenced against running twice: like `retryTransient`, and after a lost
 * connection sent again on `reconnectSchedule`, sleeping on the live clock. `detail` adds the
 * job id or lease name to the log lines.
 */
export const retryReconnecting = <A, E>(
  kinds: FailureKinds,
  purpose: string,
  detail: string,
  effect: Effect.Effect<A, E>
): Effect.Effect<A, E> =>
  inTransactionWith((inside) => {
    if (inside) return effect
    const label = `${purpose} (${detail})`
    const lost = (e: E) => kinds.isDisconnect(causeOf(e))
    const once = Effect.tapError(
      transientLoop(kinds, purpose, label, effect, 0),
      (e) =>
        lost(e)
          ? Effect.logWarning(`${label}: connection lost (${(e as SqlError).message}); trying again`)
          : Effect.void
    )
    // A first try that keeps its connection (nearly every one) pays for no retry schedule: only a
    // lost connection enters it, with that first failure replayed as its first try, so the tries
    // after it wait on the schedule as they always did.
    return Effect.catchIf(once, lost, (first) => {
      let replayed = false
      const again = Effect.suspend(() => (replayed ? once : (replayed = true, Effect.fail(first))))
      return Effect.retry(again, { schedule: reconnectSchedule, while: lost }).pipe(
        Effect.tapError((e) =>
          lost(e)
            ? Effect.zipRight(
              Metric.increment(Metric.tagged(retriesExhausted, "purpose", purpose)),
              Effect.logWarning(
                `${label}: connection still lost after every retry (${(e as SqlError).message}); giving up`
              )
            )
            : Effect.void
        ),
        Effect.withClock(liveClock)
      )
    })
  })
