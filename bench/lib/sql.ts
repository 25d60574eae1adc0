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
 * counted statement's text is also appended to that file, one line each (what scenario 6 counts).
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { MysqlClient } from "@effect/sql-mysql2"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Context, Effect, Layer, Option, Redacted, Stream } from "effect"
import { appendFileSync } from "node:fs"
import { clusterClientLayer } from "../../src/adapters/mysql/cluster.ts"
import { isMysqlUrl, isPostgresUrl } from "../../src/adapters/clients.ts"
import { nodeUrls } from "../../src/adapters/mysql/urls.ts"
import { clientLayer as postgresClientLayer } from "../../src/adapters/postgres/client.ts"

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

/** A `SqlClient` (and the driver's own tag) for a URL, with a pool of `maxConnections`. */
export const sqlLayer = (url: string, maxConnections = 10): Layer.Layer<SqlClient.SqlClient, unknown> => {
  switch (backendOf(url)) {
    case "pg":
      // leasehold's own client layer, as an app gets it from leasehold/postgres (named prepared
      // statements, src/adapters/postgres/preparing.ts; graphile-worker prepares its own too).
      return postgresClientLayer(url, { maxConnections })
    case "mariadb":
    case "galera-one":
      return MysqlClient.layer({ url: Redacted.make(url.replace(/^mariadb:/, "mysql:")), maxConnections })
    case "galera":
      return clusterClientLayer(nodeUrls(url) ?? [url], {
        maxConnectionsPerNode: Math.max(2, Math.ceil(maxConnections / 3))
      })
    case "sqlite":
      return SqliteClient.layer({ filename: sqliteFilename(url) })
  }
}

/** How many statements reached the database through the counting client. */
export interface StatementCountApi {
  readonly get: () => number
  readonly reset: () => void
}

export class StatementCount extends Context.Tag("bench/StatementCount")<StatementCount, StatementCountApi>() {}

/**
 * Replaces the `SqlClient` below it by one that counts every statement it sends, and provides
 * `StatementCount`. The wrapper takes its connections through the inner client's `reserve`.
 */
export const countingLayer: Layer.Layer<SqlClient.SqlClient | StatementCount, never, SqlClient.SqlClient> = Layer
  .scopedContext(
    Effect.gen(function*() {
      const inner = yield* SqlClient.SqlClient
      const pg = yield* Effect.serviceOption(PgClient.PgClient)
      let n = 0
      const log = process.env.BENCH_SQL_LOG
      const count = (sql: string) => {
        n++
        if (log !== undefined && log !== "") appendFileSync(log, `${sql.replace(/\s+/g, " ")}\n`)
      }
      const counted = <A>(sql: string, effect: Effect.Effect<A, SqlError>): Effect.Effect<A, SqlError> =>
        Effect.suspend(() => {
          count(sql)
          return effect
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
      const compiler = inner.onDialectOrElse({
        pg: () => PgClient.makeCompiler(),
        mysql: () => MysqlClient.makeCompiler(),
        sqlite: () => Statement.makeCompilerSqlite(),
        orElse: () => {
          throw new Error("countingLayer supports PostgreSQL, MySQL/MariaDB and SQLite")
        }
      })
      const client = yield* SqlClient.make({ acquirer, transactionAcquirer: acquirer, compiler, spanAttributes: [] })
        .pipe(Effect.provide(Reactivity.layer))
      const counter: StatementCountApi = {
        get: () => n,
        reset: () => {
          n = 0
          if (log !== undefined && log !== "") appendFileSync(log, "-- reset\n")
        }
      }
      const base = Context.make(SqlClient.SqlClient, client).pipe(Context.add(StatementCount, counter))
      if (Option.isNone(pg)) return base
      const p = pg.value
      const wrappedPg = Object.assign(client, {
        [PgClient.TypeId]: PgClient.TypeId,
        config: p.config,
        json: p.json,
        listen: p.listen,
        notify: p.notify
      }) as PgClient.PgClient
      return Context.add(base, PgClient.PgClient, wrappedPg)
    })
  )
