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
/** The Galera cluster's nodes (scripts/galera/start); databases are created through the first (DDL replicates). */
export const GALERA_NODES = (process.env.BENCH_GALERA_NODES ?? "127.0.0.1:3307,127.0.0.1:3308,127.0.0.1:3309").split(
  ","
)
const GALERA_ADMIN_URL = `mysql://root@${GALERA_NODES[0]}/`

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

const mysqlAdmin = <A>(
  f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>,
  adminUrl = MYSQL_ADMIN_URL
): Promise<A> => Effect.runPromise(Effect.flatMap(SqlClient.SqlClient, f).pipe(Effect.provide(sqlLayer(adminUrl, 1))))

const dropPg = (name: string) =>
  pgAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${checkName(name)}" WITH (FORCE)`)).then(() => undefined)

const dropMysql = (name: string, adminUrl = MYSQL_ADMIN_URL) =>
  mysqlAdmin((sql) => sql.unsafe(`DROP DATABASE IF EXISTS \`${checkName(name)}\``), adminUrl).then(() => undefined)

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
    case "mariadb":
    case "galera-one":
    case "galera": {
      const admin = backend === "mariadb" ? MYSQL_ADMIN_URL : GALERA_ADMIN_URL
      await mysqlAdmin((sql) =>
        Effect.zipRight(
          sql.unsafe(`DROP DATABASE IF EXISTS \`${name}\``),
          sql.unsafe(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`)
        ), admin)
      const url = backend === "galera" ? `mysql://root@${GALERA_NODES.join(",")}/${name}` : withDatabase(admin, name)
      return { url, drop: () => dropMysql(name, admin) }
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
  const galera = await mysqlAdmin(
    (sql) => sql.unsafe<{ v: string; n: string }>("SELECT VERSION() AS v, @@wsrep_provider_version AS n"),
    GALERA_ADMIN_URL
  )
    .then((rows) => `MariaDB ${String(rows[0]?.v ?? "?")}, Galera ${String(rows[0]?.n ?? "?")}, 3 nodes on loopback`)
    .catch(() => "Galera cluster unavailable (scripts/galera/start)")
  return { pg: pgVersion, mariadb, sqlite, "galera-one": galera, galera }
}
