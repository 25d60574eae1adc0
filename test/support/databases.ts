/**
 * The adapters under test, as layers of one `TestDatabase` service, so a conformance suite is
 * written once and run on postgres, mysql (MariaDB), sqlite and memory. Each layer isolates
 * itself with a table prefix of its own and drops its tables when it closes. Each layer also
 * owns one set of job tables, migrated the first time a test asks for it and emptied before
 * every test that uses it (see `withJobs` in ./jobs.ts).
 */
import { MysqlClient } from "@effect/sql-mysql2"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import * as Reactivity from "@effect/experimental/Reactivity"
import { Context, Effect, Layer, Redacted, Ref, Schedule } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Fences from "../../src/Fences.ts"
import * as LeaseLock from "../../src/LeaseLock.ts"
import * as JobStoreModule from "../../src/adapters/sql/JobStore.ts"
import type { JobLeases, JobStore } from "../../src/JobStore.ts"
import type { ScheduleStore } from "../../src/ports/ScheduleStore.ts"
import { makeMemoryDatabase, MemoryDatabase, type MemoryDatabaseApi } from "../../src/adapters/memory/database.ts"
import { memoryJobInsightsLayer } from "../../src/adapters/memory/JobInsights.ts"
import { memoryJobStoreLayer } from "../../src/adapters/memory/JobStore.ts"
import * as SqlJobInsights from "../../src/adapters/sql/JobInsights.ts"
import type { JobInsights } from "../../src/ports/JobInsights.ts"
import { clusterClientLayer, nodeUrls } from "../../src/adapters/mysql/cluster.ts"
import { clientLayer as postgresClientLayer } from "../../src/adapters/postgres/client.ts"
import { makeMemoryFences } from "../../src/adapters/memory/Fences.ts"
import { makeMemoryLeaseLock } from "../../src/adapters/memory/LeaseLock.ts"
import { tableNames } from "../../src/core/tables.ts"
import * as Migrator from "../../src/runtime/migrate.ts"

/**
 * The adapters every conformance suite runs on: the four of `adapterNames`, and "galera" (the
 * mysql adapter on a three-node MariaDB Galera cluster, scripts/galera/start), run by
 * test/adapters/galera.test.ts only.
 */
export type AdapterName = "postgres" | "mysql" | "sqlite" | "memory" | "galera"
/** Every adapter name, in the order the adapter test files run them. */
export const adapterNames: ReadonlyArray<AdapterName> = ["postgres", "mysql", "sqlite", "memory"]

import { GALERA_URL, MYSQL_URL, PG_URL, uniquePrefix } from "./urls.ts"
export { GALERA_URL, MYSQL_URL, PG_URL, uniquePrefix } from "./urls.ts"

/** What a conformance suite needs from an adapter. */
export interface TestDatabaseApi {
  readonly adapter: AdapterName
  /** A fresh table name under this file's prefix. */
  readonly table: (label: string) => string
  readonly leaseLock: (table: string) => Effect.Effect<LeaseLock.LeaseLockApi>
  /** Fences (guarded writes) on one table of this database (table not created). */
  readonly fences: (table: string) => Effect.Effect<Fences.FencesApi>
  /** `n` LeaseLocks on one table whose calls go out on separate connections (or clients). */
  readonly leaseLocksApart: (table: string, n: number) => Effect.Effect<ReadonlyArray<LeaseLock.LeaseLockApi>>
  readonly withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
  /** Creates leasehold's tables under `prefix` on this adapter, with leasehold's migrator. */
  readonly migrate: (prefix: string) => Effect.Effect<void>
  /** Drops one table (to test what happens without it). */
  readonly dropTable: (table: string) => Effect.Effect<void>
  /** The JobStore and JobLeases for a table prefix on this adapter (tables not created). */
  readonly storeLayer: (prefix: string) => Layer.Layer<JobStore | JobLeases | ScheduleStore>
  /** The JobInsights (the dashboard's reads) for a table prefix on this adapter (tables not created). */
  readonly insightsLayer: (prefix: string) => Layer.Layer<JobInsights>
  /** A migrator on this adapter. */
  readonly migrator: (options: Migrator.MigratorOptions) => Effect.Effect<Migrator.MigratorApi>
  /** One migrator per options entry, whose calls go out on separate connections (or clients). */
  readonly migratorsApart: (
    options: ReadonlyArray<Migrator.MigratorOptions>
  ) => Effect.Effect<ReadonlyArray<Migrator.MigratorApi>>
  /** Whether a table exists, asked of the database catalog (memory: of its table map). */
  readonly tableExists: (table: string) => Effect.Effect<boolean>
  /**
   * This layer's shared job-table prefix, migrated on first use and only once: every test of
   * the suite that runs on shared tables uses it (after `clearJobTables`).
   */
  readonly sharedJobTables: Effect.Effect<string>
  /**
   * Empties the jobs, hosts and job-lock tables under `prefix` (DELETE FROM each; memory: empty
   * maps). Dies if one of them is missing: a test that drops a table must use tables of its own.
   */
  readonly clearJobTables: (prefix: string) => Effect.Effect<void>
  /**
   * Raw SQL with `?` placeholders (rewritten to `$n` on PostgreSQL), for tests that must write
   * what an older schema wrote; the in-memory store has no SQL and dies.
   */
  readonly query: (
    text: string,
    params?: ReadonlyArray<unknown>
  ) => Effect.Effect<ReadonlyArray<Record<string, unknown>>>
  /** A table name quoted for this database's SQL. */
  readonly quote: (table: string) => string
}

/** The adapter under test, as a conformance suite sees it. */
export class TestDatabase extends Context.Tag("test/TestDatabase")<TestDatabase, TestDatabaseApi>() {}

const counter = () => {
  let n = 0
  return () => ++n
}

/** Drops every table that starts with `prefix`, through the catalog. */
export const dropPrefixed = (prefix: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const like = `${prefix}%`
    const names = yield* sql.onDialectOrElse({
      pg: () =>
        sql<
          { n: string }
        >`SELECT table_name AS n FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE ${like}`,
      mysql: () =>
        sql<
          { n: string }
        >`SELECT table_name AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE ${like}`,
      orElse: () => sql<{ n: string }>`SELECT name AS n FROM sqlite_master WHERE type = 'table' AND name LIKE ${like}`
    })
    for (const { n } of names.filter(({ n }) => n.startsWith(prefix))) {
      yield* sql.unsafe(
        `DROP TABLE IF EXISTS ${sql.onDialectOrElse({ mysql: () => `\`${n}\``, orElse: () => `"${n}"` })}`
      )
    }
  }).pipe(Effect.orDie)

/** The tables `clearJobTables` empties (docs/behaviour.md §1: jobs, hosts, job locks; §14: schedules; lost leases; §19: limits). */
const clearedTables = (prefix: string) => {
  const t = tableNames(prefix)
  return [t.jobLocks, t.hosts, t.jobs, t.schedules, t.lostLeases, t.limits]
}

/** The shared job-table prefix under a layer's own prefix (no `db.table` name ends this way). */
const sharedJobPrefix = (prefix: string) => `${prefix}shared_`

const sqlDatabase = (adapter: AdapterName, label: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const prefix = uniquePrefix(label)
    const next = counter()
    yield* Effect.addFinalizer(() => Effect.provideService(dropPrefixed(prefix), SqlClient.SqlClient, sql))
    const quote = (table: string) => sql.onDialectOrElse({ mysql: () => `\`${table}\``, orElse: () => `"${table}"` })
    const leaseLock = (table: string) => Effect.provideService(LeaseLock.make({ table }), SqlClient.SqlClient, sql)
    const migrator = (options: Migrator.MigratorOptions) =>
      Effect.provideService(Migrator.make(options), SqlClient.SqlClient, sql)
    const migrate = (p: string) => Effect.orDie(Effect.flatMap(migrator({ prefix: p }), (m) => m.run))
    const shared = sharedJobPrefix(prefix)
    const migrateShared = yield* Effect.cached(Effect.as(migrate(shared), shared))
    return TestDatabase.of({
      adapter,
      table: (l) => `${prefix}${l}${next()}`,
      leaseLock,
      fences: (table) => Effect.provideService(Fences.make({ table }), SqlClient.SqlClient, sql),
      leaseLocksApart: (table, n) => Effect.map(leaseLock(table), (lock) => Array.from({ length: n }, () => lock)),
      withTransaction: sql.withTransaction,
      migrate,
      dropTable: (table) => Effect.orDie(sql.unsafe(`DROP TABLE IF EXISTS ${quote(table)}`)),
      storeLayer: (p) => Layer.provide(JobStoreModule.layer({ prefix: p }), Layer.succeed(SqlClient.SqlClient, sql)),
      insightsLayer: (p) => Layer.provide(SqlJobInsights.layer({ prefix: p }), Layer.succeed(SqlClient.SqlClient, sql)),
      migrator,
      // One pool: concurrent runs take separate connections from it.
      migratorsApart: (options) => Effect.forEach(options, migrator),
      tableExists: (table) => Effect.orDie(Effect.flatMap(leaseLock(table), (lock) => lock.tableExists)),
      sharedJobTables: migrateShared,
      // A worker of the previous test may still be stopping, writing on another node of a Galera
      // cluster: a DELETE that loses certification (1213, a deadlock to the client) is sent again.
      clearJobTables: (p) =>
        Effect.orDie(Effect.forEach(
          clearedTables(p),
          (t) =>
            sql.unsafe(`DELETE FROM ${quote(t)}`).pipe(
              Effect.retry({
                times: 5,
                schedule: Schedule.spaced("50 millis"),
                while: (e) => String((e.cause as { errno?: number } | undefined)?.errno) === "1213"
              })
            ),
          { discard: true }
        )),
      query: (text, params = []) => {
        let n = 0
        const native = adapter === "postgres" ? text.replace(/\?/g, () => `$${++n}`) : text
        return Effect.orDie(sql.unsafe<Record<string, unknown>>(native, [...params]).withoutTransform)
      },
      quote
    })
  })

/**
 * PostgreSQL through leasehold's own client layer (named prepared statements,
 * src/adapters/postgres/preparing.ts), with a pool large enough that 50 concurrent calls use 50
 * connections.
 */
export const postgresLayer = (label: string) =>
  Layer.scoped(TestDatabase, sqlDatabase("postgres", label)).pipe(
    Layer.provide(postgresClientLayer(PG_URL, { maxConnections: 50 })),
    Layer.orDie
  )

/** MariaDB/MySQL with a pool large enough that 50 concurrent calls use 50 connections. */
export const mysqlLayer = (label: string) =>
  Layer.scoped(TestDatabase, sqlDatabase("mysql", label)).pipe(
    Layer.provide(MysqlClient.layer({ url: Redacted.make(MYSQL_URL), maxConnections: 50 })),
    Layer.orDie
  )

/**
 * The three-node Galera cluster through leasehold's cluster client: every statement (and
 * transaction) goes to the next node in turn, so each test's connections are spread over all
 * three nodes. 20 connections per node, so 50 concurrent calls use 50 connections.
 */
export const galeraLayer = (label: string) =>
  Layer.scoped(TestDatabase, sqlDatabase("galera", label)).pipe(
    Layer.provide(clusterClientLayer(nodeUrls(GALERA_URL) ?? [GALERA_URL], { maxConnectionsPerNode: 20 })),
    Layer.orDie
  )

/** Two SQLite clients on one temporary file, so "separate connections" means two clients. */
export const sqliteLayer = (label: string) =>
  Layer.scoped(
    TestDatabase,
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "leasehold-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const filename = join(dir, "test.db")
      const first = yield* SqliteClient.make({ filename })
      const second = yield* SqliteClient.make({ filename })
      const base = yield* Effect.provideService(sqlDatabase("sqlite", label), SqlClient.SqlClient, first)
      return TestDatabase.of({
        ...base,
        leaseLocksApart: (table, n) =>
          Effect.gen(function*() {
            const a = yield* base.leaseLock(table)
            const b = yield* Effect.provideService(LeaseLock.make({ table }), SqlClient.SqlClient, second)
            return Array.from({ length: n }, (_, i) => (i % 2 === 0 ? a : b))
          }),
        migratorsApart: (options) =>
          Effect.forEach(options, (o, i) =>
            i % 2 === 0 ? base.migrator(o) : Effect.provideService(Migrator.make(o), SqlClient.SqlClient, second))
      })
    })
  ).pipe(Layer.provide(Reactivity.layer), Layer.orDie)

/** The in-memory store: one fresh MemoryDatabase per layer. */
export const memoryLayer = (label: string) =>
  Layer.effect(
    TestDatabase,
    Effect.gen(function*() {
      const db: MemoryDatabaseApi = yield* makeMemoryDatabase
      const prefix = uniquePrefix(label)
      const next = counter()
      const leaseLock = (table: string) => Effect.succeed(makeMemoryLeaseLock(db, { table }))
      const migrate = (p: string) => Effect.orDie(Migrator.makeMemory(db, { prefix: p }).run)
      const shared = sharedJobPrefix(prefix)
      const migrateShared = yield* Effect.cached(Effect.as(migrate(shared), shared))
      return TestDatabase.of({
        adapter: "memory",
        table: (l) => `${prefix}${l}${next()}`,
        leaseLock,
        fences: (table) => Effect.succeed(makeMemoryFences(db, { table })),
        leaseLocksApart: (table, n) => Effect.map(leaseLock(table), (lock) => Array.from({ length: n }, () => lock)),
        withTransaction: db.withTransaction,
        migrate,
        dropTable: (table) =>
          Ref.update(db.tables, (m) => {
            const next = new Map(m)
            next.delete(table)
            return next
          }),
        storeLayer: (p) => Layer.provide(memoryJobStoreLayer({ prefix: p }), Layer.succeed(MemoryDatabase, db)),
        insightsLayer: (p) => Layer.provide(memoryJobInsightsLayer({ prefix: p }), Layer.succeed(MemoryDatabase, db)),
        migrator: (options) => Effect.succeed(Migrator.makeMemory(db, options)),
        migratorsApart: (options) => Effect.succeed(options.map((o) => Migrator.makeMemory(db, o))),
        tableExists: (table) => Effect.orDie(Effect.flatMap(leaseLock(table), (lock) => lock.tableExists)),
        sharedJobTables: migrateShared,
        clearJobTables: (p) =>
          Effect.flatMap(Ref.get(db.tables), (tables) => {
            const missing = clearedTables(p).filter((t) => !tables.has(t))
            if (missing.length > 0) return Effect.dieMessage(`no such table: ${missing.join(", ")}`)
            return Ref.set(db.tables, new Map([...tables, ...clearedTables(p).map((t) => [t, new Map()] as const)]))
          }),
        query: () => Effect.dieMessage("the in-memory store has no SQL"),
        quote: (table) => table
      })
    })
  )

/** The layer of one adapter, under a fresh table prefix built from `label`. */
export const layerFor = (adapter: AdapterName, label = "t") => {
  switch (adapter) {
    case "postgres":
      return postgresLayer(label)
    case "mysql":
      return mysqlLayer(label)
    case "sqlite":
      return sqliteLayer(label)
    case "memory":
      return memoryLayer(label)
    case "galera":
      return galeraLayer(label)
  }
}
