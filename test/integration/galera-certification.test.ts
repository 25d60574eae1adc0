/**
 * Galera certification (docs/scale-out.md): a transaction that wrote a row another node
 * committed first is rolled back at COMMIT with ER_LOCK_DEADLOCK (1213). The mysql dialect
 * calls that transient, so the claim's transaction (readCommittedTransaction) is sent again
 * whole, on real nodes of the cluster of scripts/galera/start (.ci/run starts it), after a
 * random wait (src/adapters/mysql/galera.ts `certificationBackoff`). Row locks stay on their
 * node, so the per-host cap's host lock must be a write to be certified.
 */
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { MysqlClient } from "@effect/sql-mysql2"
import { expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as mysql2 from "mysql2/promise"
import { mysql } from "../../src/adapters/mysql/dialect.ts"
import { clusterClientLayer, nodeUrls } from "../../src/adapters/mysql/cluster.ts"
import { dialectOf } from "../../src/adapters/sql/dialects.ts"
import { jobStatements } from "../../src/adapters/sql/jobStatements.ts"
import { retryTransient } from "../../src/adapters/sql/retry.ts"
import { readCommittedTransaction } from "../../src/adapters/sql/transaction.ts"
import { tableNames } from "../../src/core/tables.ts"
import { GALERA_URL, uniquePrefix } from "../support/databases.ts"

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

it.live("the per-host cap's host lock is certified: two claims for one host on two nodes cannot both commit", () =>
  Effect.promise(async () => {
    const prefix = uniquePrefix("cap")
    const s = jobStatements(mysql, tableNames(prefix))
    const strategy = mysql.jobs.hostCap
    if (strategy.kind !== "lockHostRow") throw new Error("the mysql dialect locks the host row")
    const lock = strategy.lockHost(s.context, "h", 1000)
    const [a, b] = await Promise.all([mysql2.createConnection(first), mysql2.createConnection(second)])
    const hosts = `\`${prefix}hosts\``
    try {
      await a.query(`CREATE TABLE ${hosts} (host VARCHAR(255) PRIMARY KEY, last_seen_at BIGINT NOT NULL)`)
      await a.query(`INSERT INTO ${hosts} VALUES ('h', 0), ('ha', 0), ('hb', 0)`)
      await b.query("SET SESSION wsrep_sync_wait = 7")
      await b.query(`SELECT 1 FROM ${hosts}`)
      // Each locks the host row, then writes a different row (a claim of a different job).
      await a.query("START TRANSACTION")
      await b.query("START TRANSACTION")
      await a.query(lock.sql, lock.params as Array<unknown>)
      await b.query(lock.sql, lock.params as Array<unknown>)
      await a.query(`UPDATE ${hosts} SET last_seen_at = 1 WHERE host = 'ha'`)
      await b.query(`UPDATE ${hosts} SET last_seen_at = 1 WHERE host = 'hb'`)
      await a.query("COMMIT")
      const outcome = await b.query("COMMIT").then(() => "committed", (e: { errno?: number }) => e.errno)
      expect(outcome).toBe(1213)
    } finally {
      await a.query(`DROP TABLE IF EXISTS ${hosts}`)
      await Promise.all([a.end(), b.end()])
    }
  }))

it.live("only the cluster's dialect has a retry wait: random, below 5 ms doubling, at most 250 ms", () =>
  Effect.gen(function*() {
    const dialect = dialectOf(yield* SqlClient.SqlClient)
    expect(mysql.transientBackoff).toBeUndefined()
    const backoff = dialect.transientBackoff!
    for (let attempt = 0; attempt < 12; attempt++) {
      for (let i = 0; i < 50; i++) {
        const ms = backoff(attempt)
        expect(ms).toBeGreaterThanOrEqual(0)
        expect(ms).toBeLessThan(Math.min(250, 5 * 2 ** attempt))
      }
    }
  }).pipe(Effect.provide(clusterClientLayer(nodeUrls(GALERA_URL) ?? [GALERA_URL]))))
