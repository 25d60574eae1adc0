/**
 * SqlClient layers for the benchmark, chosen by URL the way the leasehold CLI chooses them
 * (`postgres://…`, `mysql://…` / `mariadb://…`, or an SQLite file path, optionally `sqlite:`),
 * and a statement-counting wrapper for the round-trips scenario.
 *
 * `countingLayer` wraps whatever `SqlClient` is below it: every statement that reaches a
 * connection (queries, BEGIN/COMMIT/ROLLBACK, savepoints) adds one to `StatementCount`. It
 * counts at the `Connection`, so statements inside transactions are counted as well. On
 * PostgreSQL the `PgClient` service is passed through (its config, listen and notify), so a
 * worker still finds the LISTEN settings it looks for. With `BENCH_SQL_LOG=<file>` set, each
 * counted statement's text is also appended to that file, one line each (what scenario 6 counts);
 * with `BENCH_SQL_LOG_TIMES=1` as well, each line is written when the statement's reply came and
 * starts with the epoch ms it was sent, its round trip in ms and the rows it returned (an array's
 * length, else `-`), to lay beside a worker's own log (scenario 3b's BENCH_RATE_LOG).
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import type { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Redacted, Stream } from "effect"
import { appendFileSync } from "node:fs"
import { isMysqlUrl, isPostgresUrl } from "../../src/adapters/clients.ts"
import { nodeUrls } from "../../src/adapters/mysql/urls.ts"

/**
 * The databases leasehold runs on, and the three-node Galera cluster of scripts/galera/start:
 * "galera-one" sends everything to its first node, "galera" spreads statements over all three
 * (leasehold's cluster client, src/adapters/mysql/cluster.ts).
 */
export type Backend = "pg" | "mariadb" | "sqlite" | "galera-one" | "galera"

/** Which database a URL names (a MySQL URL with several hosts: the Galera cluster, spread). */
export const backendOf = (url: string): Backend => {
  if (nodeUrls(url) !== undefined) return "galera"
  return isPostgresUrl(url) ? "pg" : isMysqlUrl(url) ? "mariadb" : "sqlite"
}

/** The SQLite file of a URL (`sqlite:`/`file:` prefixes stripped, as the CLI does). */
export const sqliteFilename = (url: string): string => url.replace(/^sqlite:(\/\/)?/, "").replace(/^file:/, "")

/**
 * A `SqlClient` (and the driver's own tag) for a URL, with a pool of `maxConnections`. Only that
 * database's driver is loaded, as leasehold's own src/adapters/clients.ts does: the child's peak
 * RSS holds no other database's client (the MySQL and SQLite ones were 8 MiB of a PostgreSQL run).
 */
export const sqlLayer = (url: string, maxConnections = 10): Layer.Layer<SqlClient.SqlClient, unknown> =>
  Layer.unwrapEffect(Effect.promise(async (): Promise<Layer.Layer<SqlClient.SqlClient, unknown>> => {
    switch (backendOf(url)) {
      case "pg": {
        // leasehold's own client layer, as an app gets it from leasehold/postgres (named prepared
        // statements, src/adapters/postgres/preparing.ts; graphile-worker prepares its own too).
        const { clientLayer } = await import("../../src/adapters/postgres/client.ts")
        return clientLayer(url, { maxConnections })
      }
      case "mariadb":
      case "galera-one": {
        const { MysqlClient } = await import("@effect/sql-mysql2")
        return MysqlClient.layer({ url: Redacted.make(url.replace(/^mariadb:/, "mysql:")), maxConnections })
      }
      case "galera": {
        const { clusterClientLayer } = await import("../../src/adapters/mysql/cluster.ts")
        return clusterClientLayer(nodeUrls(url) ?? [url], {
          maxConnectionsPerNode: Math.max(2, Math.ceil(maxConnections / 3))
        })
      }
      case "sqlite": {
        const { SqliteClient } = await import("@effect/sql-sqlite-node")
        return SqliteClient.layer({ filename: sqliteFilename(url) })
      }
    }
  }))

/** How many statements reached the database through the counting client. */
export interface StatementCountApi {
  readonly get: () => number
  /**
   * How many of them were wake-up notifications on their own (`SELECT pg_notify(…)`), which a
   * store sends after its writes, from a fiber of its own (src/adapters/sql/wakeupSignal.ts).
   */
  readonly notifications: () => number
  readonly reset: () => void
}

export class StatementCount extends Context.Tag("bench/StatementCount")<StatementCount, StatementCountApi>() {}

/** A dialect's statement compiler, and on PostgreSQL its client module (for the `PgClient` tag). */
interface Driver {
  readonly compiler: Statement.Compiler
  readonly pg?: typeof import("@effect/sql-pg").PgClient
}

/**
 * Replaces the `SqlClient` below it by one that counts every statement it sends, and provides
 * `StatementCount`. The wrapper takes its connections through the inner client's `reserve`.
 */
export const countingLayer: Layer.Layer<SqlClient.SqlClient | StatementCount, never, SqlClient.SqlClient> = Layer
  .scopedContext(
    Effect.gen(function*() {
      const inner = yield* SqlClient.SqlClient
      // The dialect's own module only (see sqlLayer).
      const driver = yield* Effect.promise((): Promise<Driver> =>
        inner.onDialectOrElse({
          pg: async () => {
            const { PgClient } = await import("@effect/sql-pg")
            return { compiler: PgClient.makeCompiler(), pg: PgClient }
          },
          mysql: async () => ({ compiler: (await import("@effect/sql-mysql2")).MysqlClient.makeCompiler() }),
          sqlite: async () => ({ compiler: Statement.makeCompilerSqlite() }),
          orElse: () => Promise.reject(new Error("countingLayer supports PostgreSQL, MySQL/MariaDB and SQLite"))
        })
      )
      const PgTag = driver.pg
      const pg = PgTag === undefined ? Option.none() : yield* Effect.serviceOption(PgTag.PgClient)
      let n = 0
      let notified = 0
      const log = process.env.BENCH_SQL_LOG
      const times = log !== undefined && log !== "" && process.env.BENCH_SQL_LOG_TIMES === "1"
      const count = (sql: string) => {
        n++
        if (sql.startsWith("SELECT pg_notify(")) notified++
        if (log !== undefined && log !== "" && !times) appendFileSync(log, `${sql.replace(/\s+/g, " ")}\n`)
      }
      const counted = <A>(sql: string, effect: Effect.Effect<A, SqlError>): Effect.Effect<A, SqlError> =>
        Effect.suspend(() => {
          count(sql)
          if (!times) return effect
          const sent = Date.now()
          return Effect.tap(effect, (result) =>
            appendFileSync(
              log!,
              `${sent} ${Date.now() - sent} ${Array.isArray(result) ? result.length : "-"} ${
                sql.replace(/\s+/g, " ")
              }\n`
            ))
        })
      const wrap = (c: Connection): Connection => ({
        execute: (sql, params, transformRows) => counted(sql, c.execute(sql, params, transformRows)),
        executeRaw: (sql, params) => counted(sql, c.executeRaw(sql, params)),
        executeStream: (sql, params, transformRows) =>
          Stream.suspend(() => {
            count(sql)
            return c.executeStream(sql, params, transformRows)
          }),
        executeValues: (sql, params) => counted(sql, c.executeValues(sql, params)),
        executeUnprepared: (sql, params, transformRows) => counted(sql, c.executeUnprepared(sql, params, transformRows))
      })
      const acquirer = Effect.map(inner.reserve, wrap)
      const client = yield* SqlClient.make({
        acquirer,
        transactionAcquirer: acquirer,
        compiler: driver.compiler,
        spanAttributes: []
      })
        .pipe(Effect.provide(Reactivity.layer))
      const counter: StatementCountApi = {
        get: () => n,
        notifications: () => notified,
        reset: () => {
          n = 0
          notified = 0
          if (log !== undefined && log !== "") appendFileSync(log, "-- reset\n")
        }
      }
      const base = Context.make(SqlClient.SqlClient, client).pipe(Context.add(StatementCount, counter))
      if (PgTag === undefined || Option.isNone(pg)) return base
      const p = pg.value
      const wrappedPg = Object.assign(client, {
        [PgTag.TypeId]: PgTag.TypeId,
        config: p.config,
        json: p.json,
        listen: p.listen,
        notify: p.notify
      }) as PgClient.PgClient
      return Context.add(base, PgTag.PgClient, wrappedPg)
    })
  )
