/**
 * Fresh databases for benchmark runs, one per child process: `lh_bench_*` databases on the
 * local PostgreSQL and MariaDB (created empty, dropped afterwards), and a temporary SQLite file.
 * Only names matching `lh_bench_[a-z0-9_]+` are ever created or dropped.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import pg from "pg"
import { type Backend, sqlLayer } from "./sql.ts"

/** Admin connections (any database but the benchmark's own). */
export const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
export const MYSQL_ADMIN_URL = process.env.BENCH_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/"

const NAME = /^lh_bench_[a-z0-9_]{1,54}$/

const checkName = (name: string): string => {
  if (!NAME.test(name)) throw new Error(`refusing database name ${JSON.stringify(name)} (must match ${NAME})`)
  return name
}

const withDatabase = (adminUrl: string, name: string): string => {
  const u = new URL(adminUrl)
  u.pathname = `/${name}`
  return u.toString()
}

/** A database made for one run: its URL and how to drop it. */
export interface BenchDatabase {
  readonly url: string
  readonly drop: () => Promise<void>
}

const pgAdmin = async <A>(f: (c: pg.Client) => Promise<A>): Promise<A> => {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL })
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

const mysqlAdmin = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>): Promise<A> =>
  Effect.runPromise(Effect.flatMap(SqlClient.SqlClient, f).pipe(Effect.provide(sqlLayer(MYSQL_ADMIN_URL, 1))))

const dropPg = (name: string) =>
  pgAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${checkName(name)}" WITH (FORCE)`)).then(() => undefined)

const dropMysql = (name: string) =>
  mysqlAdmin((sql) => sql.unsafe(`DROP DATABASE IF EXISTS \`${checkName(name)}\``)).then(() => undefined)

/** Creates (after dropping any leftover of the same name) an empty database for one run. */
export const createDatabase = async (backend: Backend, name: string): Promise<BenchDatabase> => {
  checkName(name)
  switch (backend) {
    case "pg": {
      await pgAdmin(async (c) => {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
        await c.query(`CREATE DATABASE "${name}"`)
        // Start every run from the same place: nothing left to flush from the previous one.
        await c.query("CHECKPOINT")
      })
      return { url: withDatabase(PG_ADMIN_URL, name), drop: () => dropPg(name) }
    }
    case "mariadb": {
      await mysqlAdmin((sql) =>
        Effect.zipRight(
          sql.unsafe(`DROP DATABASE IF EXISTS \`${name}\``),
          sql.unsafe(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`)
        )
      )
      return { url: withDatabase(MYSQL_ADMIN_URL, name), drop: () => dropMysql(name) }
    }
    case "sqlite": {
      const dir = mkdtempSync(join(tmpdir(), `${name}-`))
      return {
        url: join(dir, `${name}.db`),
        drop: async () => rmSync(dir, { recursive: true, force: true })
      }
    }
  }
}

/** Server versions for the report; "unavailable" when a server cannot be reached. */
export const serverVersions = async (): Promise<Record<Backend, string>> => {
  const pgVersion = await pgAdmin((c) => c.query("SHOW server_version"))
    .then((r) => `PostgreSQL ${String(r.rows[0]?.server_version ?? "?")}`)
    .catch((e) => `PostgreSQL unavailable (${e instanceof Error ? e.message : String(e)})`)
  const mariadb = await mysqlAdmin((sql) => sql.unsafe<{ v: string }>("SELECT VERSION() AS v"))
    .then((rows) => `MariaDB ${String(rows[0]?.v ?? "?")}`)
    .catch(() => "MariaDB unavailable")
  const sqlite = await Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<{ v: string }>("SELECT sqlite_version() AS v")).pipe(
      Effect.provide(sqlLayer(":memory:", 1))
    )
  ).then((rows) => `SQLite ${String(rows[0]?.v ?? "?")}`).catch(() => "SQLite unavailable")
  return { pg: pgVersion, mariadb, sqlite }
}
