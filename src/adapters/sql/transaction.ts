/**
 * Transactions as the SQL stores need them: whether the caller already runs one (then every
 * statement joins it), and, on MySQL/MariaDB, a transaction at READ COMMITTED.
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit, Option } from "effect"

/** Whether the current fiber runs inside a `sql.withTransaction`. */
export const inTransaction: Effect.Effect<boolean> = Effect.map(
  Effect.serviceOption(SqlClient.TransactionConnection),
  Option.isSome
)

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
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | SqlError, R> => reservedTransaction(sql, `${NEXT_READ_COMMITTED}; START TRANSACTION`, effect)

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
  effect: Effect.Effect<A, E, R>
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
            yield* conn.executeUnprepared("COMMIT", [], undefined)
            return exit.value
          }
          yield* Effect.ignore(conn.executeUnprepared("ROLLBACK", [], undefined))
          return yield* exit
        }))
      )
  )
