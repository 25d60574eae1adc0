/**
 * Wake-ups across processes (docs/behaviour.md §9): an idle worker whose poll interval is an
 * hour starts a job that another connection enqueued, on every database. PostgreSQL hears it by
 * LISTEN/NOTIFY; MySQL/MariaDB and SQLite by the store's idle probe (the first due job's id;
 * SQLite's `PRAGMA data_version`). The enqueue runs in a transaction on another connection, so
 * no in-process ring (src/adapters/localWakeups.ts) reaches the worker: only the database's signal
 * can. Real time, bounded by `eventually` (10 s), far below the hour a poll would take.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { MysqlClient } from "@effect/sql-mysql2"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import * as Reactivity from "@effect/experimental/Reactivity"
import { Effect, Layer, Option, Redacted, Ref, TestServices } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as JobStoreModule from "../../src/adapters/sql/JobStore.ts"
import { JobStore } from "../../src/JobStore.ts"
import { enqueue, jobsLayer } from "../../src/runtime/Job.ts"
import * as Migrator from "../../src/runtime/migrate.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { MYSQL_URL, mysqlLayer, PG_URL, postgresLayer, TestDatabase, uniquePrefix } from "../support/databases.ts"
import { eventually, Ok, RunLog } from "../support/jobs.ts"

const workerConfig = { host: "idle", concurrency: 1, pollInterval: "1 hour", reapInterval: "1 hour" } as const

/**
 * Starts a worker over `workerSql`, waits until it is idle, enqueues one job in a transaction over
 * `otherSql`, and waits for the worker to complete it.
 */
const wokenAcross = (workerSql: SqlClient.SqlClient, otherSql: SqlClient.SqlClient, prefix: string) =>
  TestServices.provideLive(Effect.scoped(
    Effect.gen(function*() {
      const log = yield* RunLog
      const jobs = jobsLayer(Ok)
      const on = (sql: SqlClient.SqlClient) =>
        Layer.merge(Layer.provide(JobStoreModule.layer({ prefix }), Layer.succeed(SqlClient.SqlClient, sql)), jobs)
      const scope = yield* Effect.scope
      yield* Layer.buildWithScope(Worker.layer(workerConfig), scope).pipe(Effect.provide(on(workerSql)))
      // the worker's first claim found nothing: it is idle until its poll, an hour away
      yield* Effect.sleep("300 millis")
      const { id } = yield* otherSql.withTransaction(enqueue(Ok, { n: 1 })).pipe(Effect.provide(on(otherSql)))
      yield* eventually(
        Effect.map(
          Effect.flatMap(JobStore, (s) => s.get(id)),
          (r) => Option.exists(r, (j) => j.status === "completed")
        ).pipe(Effect.provide(on(otherSql)))
      )
      expect((yield* Ref.get(log)).map((r) => r.id)).toEqual([id])
    }).pipe(
      Effect.provideServiceEffect(RunLog, Ref.make<ReadonlyArray<{ id: string; n: number; attempt: number }>>([]))
    )
  ))

const onServer = (adapter: "postgres" | "mysql") =>
  Effect.gen(function*() {
    const db = yield* TestDatabase
    expect(db.adapter).toBe(adapter)
    const prefix = db.table("w") + "_"
    yield* db.migrate(prefix)
    // one pool: the enqueue's transaction holds a connection of its own
    const sql = yield* SqlClient.SqlClient
    yield* wokenAcross(sql, sql, prefix)
  })

describe("an idle worker hears of a job enqueued elsewhere before its poll", () => {
  it.effect("postgres: LISTEN/NOTIFY", () =>
    onServer("postgres").pipe(
      Effect.provide(
        Layer.merge(postgresLayer("iw"), PgClient.layer({ url: Redacted.make(PG_URL), maxConnections: 4 }))
      )
    ), 30_000)

  it.effect("mysql: the idle probe (first due job's id)", () =>
    onServer("mysql").pipe(
      Effect.provide(
        Layer.merge(mysqlLayer("iw"), MysqlClient.layer({ url: Redacted.make(MYSQL_URL), maxConnections: 4 }))
      )
    ), 30_000)

  it.effect("sqlite: the idle probe (PRAGMA data_version), two connections to one file", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "leasehold-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const filename = join(dir, "idle.db")
      const first = yield* SqliteClient.make({ filename })
      const second = yield* SqliteClient.make({ filename })
      const prefix = uniquePrefix("iw")
      yield* Effect.flatMap(Migrator.make({ prefix }), (m) => m.run).pipe(
        Effect.provideService(SqlClient.SqlClient, first)
      )
      yield* wokenAcross(first, second, prefix)
    }).pipe(Effect.scoped, Effect.provide(Reactivity.layer)), 30_000)
})
