/**
 * Transactions as the SQL stores need them: whether the caller already runs one (then every
 * statement joins it), and, on MySQL/MariaDB, a transaction at READ COMMITTED.
 */
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Context, Effect, Exit, Option } from "effect"
import { isGaleraCluster, writeSetCheck } from "../mysql/galera.ts"

/** Whether a fiber with this context runs inside a `sql.withTransaction`. */
export const isTransactionContext = (context: Context.Context<never>): boolean =>
  Option.isSome(Context.getOption(context, SqlClient.TransactionConnection))

/**
 * Whether the current fiber runs inside a `sql.withTransaction`. Read off the fiber in one step
 * (a `serviceOption` and a map were four, and a claim or an enqueue asks two or three times).
 */
export const inTransaction: Effect.Effect<boolean> = Effect.withFiberRuntime((fiber) =>
  Effect.succeed(isTransactionContext(fiber.currentContext))
)

/**
 * `f` of whether the current fiber runs inside a `sql.withTransaction`, in one step (a flatMap
 * of `inTransaction` is three, and an enqueue, a claim or a completion asks several times).
 */
export const inTransactionWith = <A, E, R>(f: (inside: boolean) => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) => f(isTransactionContext(fiber.currentContext)))

/**
 * The text that makes the next transaction on a MySQL/MariaDB connection (an autocommit
 * statement is one) run at READ COMMITTED, without changing the session's own level.
 * See docs/retries.md for why claims and job writes run at that level there.
 */
export const NEXT_READ_COMMITTED = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED"

/**
 * Runs `effect` as one MySQL/MariaDB transaction at READ COMMITTED on a connection of its own
 * (`sql.withTransaction` always begins at the session's level). Statements in `effect` run on
 * that connection. Commits on success; rolls back on failure or interruption. A COMMIT the
 * database refuses (on Galera, a certification failure) fails with its `SqlError`, which
 * `sql.withTransaction` would turn into a defect. Inside the caller's transaction it simply
 * joins it.
 *
 * The SET and the START go as one multi-statement query: @effect/sql-mysql2 always opens its
 * pool with `multipleStatements: true`.
 */
export const readCommittedTransaction = <A, E, R>(
  sql: SqlClient.SqlClient,
  effect: Effect.Effect<A, E, R>,
  options?: CommitOptions<A>
): Effect.Effect<A, E | SqlError, R> =>
  reservedTransaction(sql, `${NEXT_READ_COMMITTED}; START TRANSACTION`, effect, options)

/**
 * Sends `body` (several `;`-separated statements, MySQL/MariaDB) as ONE multi-statement query that
 * runs them as a READ COMMITTED transaction and commits: one round trip. Returns the driver's
 * result of each statement of `body`, in order. If a statement fails, the rest are not run and
 * the transaction is rolled back before the connection goes back to the pool; the failure is
 * returned. Inside the caller's transaction `body` alone is sent and joins it.
 *
 * Not for a Galera cluster: the COMMIT cannot be checked there (see `CommitOptions`).
 */
export const packedTransaction = (
  sql: SqlClient.SqlClient,
  body: { readonly sql: string; readonly params: ReadonlyArray<unknown> }
): Effect.Effect<ReadonlyArray<unknown>, SqlError> =>
  inTransactionWith((inside) =>
    inside
      ? sql.unsafe(body.sql, body.params as Array<unknown>).unprepared
      : Effect.uninterruptible(Effect.scoped(Effect.gen(function*() {
        const conn = yield* sql.reserve
        const results = yield* Effect.tapError(
          conn.executeUnprepared(
            `${NEXT_READ_COMMITTED}; START TRANSACTION; ${body.sql}; COMMIT`,
            body.params,
            undefined
          ),
          () => Effect.ignore(conn.executeUnprepared("ROLLBACK", [], undefined))
        )
        // The SET and the START before `body`, its COMMIT after.
        return results.slice(2, -1)
      })))
  )

/**
 * The rows of the last statement that returned rows, in a multi-statement query's results (the
 * driver gives rows for a SELECT or RETURNING, a result header for other statements).
 */
export const lastRows = (results: ReadonlyArray<unknown>): ReadonlyArray<Record<string, unknown>> =>
  ([...results].reverse().find(Array.isArray) ?? []) as ReadonlyArray<Record<string, unknown>>

/** Options of `readCommittedTransaction`. */
export interface CommitOptions<A> {
  /**
   * True when the transaction's result counts only if its writes were committed (a lease
   * acquisition that bumped its token). On a Galera cluster (src/adapters/mysql/galera.ts) the
   * commit is then checked, at two statements more; on one server nothing is added.
   *
   * Why: a transaction that another node's write set aborts (a brute-force abort) while the
   * client sits between two statements can be rolled back without any statement reporting it:
   * later reads and the COMMIT answer OK and the session is simply outside a transaction
   * (seen on MariaDB 10.11 in the 12-acquirer churn test of test/conformance/fencing.ts: two
   * acquisitions got one token, one of them never committed). So before COMMIT the session must
   * still be in its transaction, and after it the GTID of the session's last replicated write
   * set must have moved on (a rollback between the check and COMMIT leaves it where it was).
   * Either failing is reported as a deadlock: rolled back whole, so `retryTransient` may run the
   * transaction again.
   */
  readonly mustCommitWrites?: (result: A) => boolean
}

/**
 * Like `readCommittedTransaction`, at the session's own isolation level: a MySQL/MariaDB
 * transaction whose refused COMMIT fails with its `SqlError` instead of dying.
 */
export const sessionTransaction = <A, E, R>(
  sql: SqlClient.SqlClient,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | SqlError, R> => reservedTransaction(sql, "START TRANSACTION", effect)

const reservedTransaction = <A, E, R>(
  sql: SqlClient.SqlClient,
  start: string,
  effect: Effect.Effect<A, E, R>,
  options?: CommitOptions<A>
): Effect.Effect<A, E | SqlError, R> =>
  Effect.flatMap(
    inTransaction,
    (inside) =>
      inside ? effect : Effect.uninterruptibleMask((restore) =>
        Effect.scoped(Effect.gen(function*() {
          const conn = yield* sql.reserve
          yield* conn.executeUnprepared(start, [], undefined)
          const exit = yield* Effect.exit(
            restore(Effect.provideService(effect, SqlClient.TransactionConnection, [conn, 0] as const))
          )
          if (Exit.isSuccess(exit)) {
            const check = isGaleraCluster(sql) && options?.mustCommitWrites?.(exit.value) === true
            const rollback = Effect.ignore(conn.executeUnprepared("ROLLBACK", [], undefined))
            const before = check
              ? (yield* Effect.tapError(conn.executeUnprepared(writeSetCheck.beforeCommit, [], undefined), () =>
                rollback))[0]
              : undefined
            if (check && Number(before?.open) !== 1) {
              yield* rollback
              return yield* Effect.fail(writesLost("the transaction was rolled back before COMMIT"))
            }
            yield* conn.executeUnprepared("COMMIT", [], undefined)
            if (check) {
              const after = (yield* conn.executeUnprepared(writeSetCheck.afterCommit, [], undefined))[0]
              if (String(after?.gtid) === String(before?.gtid)) {
                return yield* Effect.fail(writesLost("COMMIT answered OK but replicated no write set"))
              }
            }
            return exit.value
          }
          yield* Effect.ignore(conn.executeUnprepared("ROLLBACK", [], undefined))
          return yield* exit
        }))
      )
  )

// Reported like a deadlock victim (ER_LOCK_DEADLOCK): the transaction's writes are all gone.
const writesLost = (what: string) =>
  new SqlError({
    cause: { code: "ER_LOCK_DEADLOCK", message: `Galera: ${what}` },
    message: `Galera: ${what}`
  })
