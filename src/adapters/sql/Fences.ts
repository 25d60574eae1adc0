/**
 * Guarded writes on PostgreSQL, MySQL/MariaDB and SQLite: the port in src/ports/Fences.ts over
 * the current `SqlClient` (docs/behaviour.md §2, "Fencing tokens").
 *
 * The guard records the token in one upsert per dialect (src/adapters/{postgres,mysql,sqlite}/
 * dialect.ts, `fences.record`): the row is inserted at `$t`, or raised to `$t` where its token is
 * lower (`GREATEST`), and read back. The recorded token equals `$t` iff `$t` was at least the
 * highest seen: then the write runs. The upsert locks the row (on SQLite, the database) until the
 * transaction ends, so the write cannot interleave with another guard of the same resource, and
 * a concurrent guard re-reads the row after our commit. A holder may write any number of times.
 * A guard in a transaction of its own that the database rolls back (a deadlock; on Galera, a
 * certification failure at COMMIT) runs again whole, its write included.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import { LeaseTableInTransactionError, StaleTokenError } from "../../core/errors.ts"
import { decodeToken } from "../../core/lease.ts"
import { Fences, type FencesApi, type GuardInput } from "../../ports/Fences.ts"
import { validateFence } from "../fenceInput.ts"
import { dialectOf } from "./dialects.ts"
import { retryTransient } from "./retry.ts"
import { checkIdentifier, RawSql, type Statement, sqlFor } from "./statement.ts"
import { inTransaction, sessionTransaction } from "./transaction.ts"

/** Builds Fences over the current `SqlClient` for one table. Library statements run without the app's name transforms. */
export const make = (options: { readonly table: string }): Effect.Effect<FencesApi, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const dialect = dialectOf(sql)
    const q = sqlFor(dialect.syntax)
    const t = new RawSql(dialect.syntax.quote(checkIdentifier(options.table)))
    const createTable = dialect.fences.createTable(t)

    const rows = (s: Statement) =>
      sql.unsafe<Record<string, unknown>>(s.sql, s.params as Array<unknown>).withoutTransform

    const readHighest = (resource: string) =>
      Effect.map(
        rows(q`SELECT token FROM ${t} WHERE resource = ${resource}`),
        (r) => Option.map(Option.fromNullable(r[0]), (x) => decodeToken(x.token))
      )

    // The resource's highest token after recording `token`.
    const record = (resource: string, token: number) =>
      Effect.gen(function*() {
        let last: ReadonlyArray<Record<string, unknown>> = []
        for (const s of dialect.fences.record(t, resource, token)) last = yield* rows(s)
        return decodeToken(last[0]?.token)
      })

    // Inside the caller's transaction, a savepoint (a failed write rolls back to it). On its own
    // on a server (PostgreSQL, MySQL/MariaDB), a transaction whose refused COMMIT (on Galera, a
    // certification failure; anywhere, a connection lost at COMMIT as the server restarts) fails
    // with a SqlError where `sql.withTransaction` would die: the chaos run's restarts caught it.
    // SQLite runs in-process and has no connection to lose.
    const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.flatMap(
        inTransaction,
        (inside) =>
          !inside && dialect.syntax.name !== "sqlite"
            ? sessionTransaction(sql, effect)
            : sql.withTransaction(effect)
      )

    // In a transaction of its own, a deadlock or (Galera) a certification failure at COMMIT rolled
    // it back whole, so it runs again whole: the token is recorded again (or found stale) and the
    // write runs at most once in a committed transaction. Inside the caller's transaction the error
    // reaches the caller (./retry.ts).
    const guard = <A, E, R>({ resource, token }: GuardInput, write: Effect.Effect<A, E, R>) =>
      Effect.zipRight(
        validateFence(resource, token),
        retryTransient(
          dialect,
          "guard",
          transaction(Effect.gen(function*() {
            const highest = yield* record(resource, Number(token))
            if (highest !== token) return yield* new StaleTokenError({ resource, token, highest })
            return yield* write
          }))
        )
      )

    const tableExists = Effect.map(rows(dialect.lease.tableExists(options.table)), (r) => r.length > 0)

    return Fences.of({
      table: options.table,
      createTableSql: createTable.sql,
      guard,
      highest: (resource) => Effect.zipRight(validateFence(resource), readHighest(resource)),
      tableExists,
      ensureTable: Effect.gen(function*() {
        if (yield* tableExists) return
        if (yield* inTransaction) {
          return yield* new LeaseTableInTransactionError({ table: options.table, createTable: createTable.sql })
        }
        yield* rows(createTable)
      })
    })
  })

/** A layer providing `Fences` for one table over the current `SqlClient`. */
export const layer = (options: { readonly table: string }): Layer.Layer<Fences, never, SqlClient.SqlClient> =>
  Layer.effect(Fences, make(options))
