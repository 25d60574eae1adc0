/**
 * Galera certification (docs/scale-out.md): a transaction that wrote a row another node
 * committed first is rolled back at COMMIT with ER_LOCK_DEADLOCK (1213). The mysql dialect
 * calls that transient, so the claim's transaction (readCommittedTransaction) is sent again
 * whole, on real nodes of the cluster of scripts/galera/start (.ci/run starts it).
 */
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { MysqlClient } from "@effect/sql-mysql2"
import { expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as mysql2 from "mysql2/promise"
import { mysql } from "../src/adapters/mysql/dialect.ts"
import { nodeUrls } from "../src/adapters/mysql/cluster.ts"
import { retryTransient } from "../src/adapters/sql/retry.ts"
import { readCommittedTransaction } from "../src/adapters/sql/transaction.ts"
import { GALERA_URL, uniquePrefix } from "./support/databases.ts"

const [first = "", second = ""] = nodeUrls(GALERA_URL) ?? []

/** A table with one row, created through the first node; dropped at the end. */
const withRow = <A, E>(use: (table: string, other: mysql2.Connection) => Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.acquireUseRelease(
    Effect.promise(async () => {
      const conn = await mysql2.createConnection(first)
      const table = `${uniquePrefix("cert")}t`
      await conn.query(`CREATE TABLE \`${table}\` (id INT PRIMARY KEY, v INT NOT NULL)`)
      await conn.query(`INSERT INTO \`${table}\` VALUES (1, 0)`)
      return { conn, table }
    }),
    ({ conn, table }) => Effect.provide(use(table, conn), MysqlClient.layer({ url: Redacted.make(second) })),
    ({ conn, table }) => Effect.promise(() => conn.query(`DROP TABLE \`${table}\``).then(() => conn.end()))
  )

it.live("a commit another node certified first fails with 1213: transient, not a lost connection", () =>
  withRow((table) =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const other = yield* Effect.promise(() => mysql2.createConnection(first))
      const failure = yield* Effect.flip(readCommittedTransaction(
        sql,
        Effect.gen(function*() {
          yield* sql.unsafe(`UPDATE \`${table}\` SET v = v + 1 WHERE id = 1`)
          // Row locks are per node: the first node commits the same row at once.
          yield* Effect.promise(() => other.query(`UPDATE \`${table}\` SET v = v + 100 WHERE id = 1`))
        })
      ))
      yield* Effect.promise(() => other.end())
      expect(failure).toBeInstanceOf(SqlError)
      const cause = (failure as SqlError).cause
      expect((cause as { errno?: number }).errno).toBe(1213)
      expect(mysql.isTransient(cause)).toBe(true)
      expect(mysql.isDisconnect(cause)).toBe(false)
      // The loser's write is gone whole; the winner's stands.
      expect(yield* sql.unsafe(`SELECT v FROM \`${table}\` WHERE id = 1`)).toEqual([{ v: 100 }])
    })
  ))

it.live("a transaction that lost certification at COMMIT is sent again whole and then commits", () =>
  withRow((table) =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const other = yield* Effect.promise(() => mysql2.createConnection(first))
      let tries = 0
      yield* retryTransient(
        mysql,
        "claim",
        readCommittedTransaction(
          sql,
          Effect.gen(function*() {
            tries++
            yield* sql.unsafe(`UPDATE \`${table}\` SET v = v + 1 WHERE id = 1`)
            if (tries === 1) {
              yield* Effect.promise(() => other.query(`UPDATE \`${table}\` SET v = v + 100 WHERE id = 1`))
            }
          })
        )
      )
      yield* Effect.promise(() => other.end())
      expect(tries).toBe(2)
      expect(yield* sql.unsafe(`SELECT v FROM \`${table}\` WHERE id = 1`)).toEqual([{ v: 101 }])
    })
  ))
