/**
 * The stores' direct path on PostgreSQL (src/adapters/sql/direct.ts): a statement outside any
 * transaction goes straight to the pool of leasehold's client layer; inside a transaction, under
 * a tracer or under a statement transformer it goes through @effect/sql as before. A failed
 * statement is an `SqlError` carrying the driver's error, and every statement gives its
 * connection back, interrupted or not (each test has one connection, so a connection kept would
 * hang the next statement). Tables have a prefix of their own.
 */
import { expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import * as Statement from "@effect/sql/Statement"
import { SqlError } from "@effect/sql/SqlError"
import { Duration, Effect, Either, Exit, Layer, Option, Schema, Tracer } from "effect"
import pg from "pg"
import { poolLayer } from "../../src/adapters/postgres/client.ts"
import { type DirectRunner, registerDirect, registeredRunner } from "../../src/adapters/sql/direct.ts"
import * as Postgres from "../../src/postgres.ts"
import { define, enqueue } from "../../src/runtime/Job.ts"
import * as Leasehold from "../../src/runtime/Leasehold.ts"
import * as Migrator from "../../src/runtime/migrate.ts"
import { JobStore } from "../../src/ports/JobStore.ts"
import { dropPrefixed } from "../support/databases.ts"
import { PG_URL, uniquePrefix } from "../support/urls.ts"

const Ping = define({ name: "ping", schema: Schema.Struct({ n: Schema.Number }), perform: () => Effect.void })

/** Wraps the client's direct path so the test sees how many statements took it. */
const countDirect = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const runner = registeredRunner(sql)
  expect(runner).toBeDefined()
  let n = 0
  const counting: DirectRunner = {
    run: (text, params, raw) => Effect.suspend(() => (n++, runner!.run(text, params, raw)))
  }
  registerDirect(sql, counting)
  return { count: () => n }
})

/** A tracer that records the names of the spans it is asked to make (Effect's own makes them). */
const recordingTracer = (names: Array<string>) => {
  const base = Effect.runSync(Effect.tracer)
  return Tracer.make({
    span: (name, ...rest) => {
      names.push(name)
      return base.span(name, ...rest)
    },
    context: base.context
  })
}

const withTables = <A, E>(prefix: string, body: Effect.Effect<A, E, any>) =>
  Effect.gen(function*() {
    yield* (yield* Migrator.make({ prefix })).run
    return yield* Effect.ensuring(body, Effect.orDie(dropPrefixed(prefix)))
  }).pipe(Effect.provide(Postgres.layer({ url: PG_URL, prefix, jobs: [Ping], maxConnections: 1 }))) as Effect.Effect<
    A,
    E | unknown
  >

/** `body` with the direct path of a client layer of one connection, over migrated tables. */
const withRunner = <A, E>(body: (runner: DirectRunner) => Effect.Effect<A, E, any>) =>
  withTables(uniquePrefix("direct"), Effect.flatMap(SqlClient.SqlClient, (sql) => body(registeredRunner(sql)!)))

it.live(
  "a store's statement outside a transaction goes straight to the pool; inside a transaction, under a tracer or a transformer it goes through @effect/sql",
  () => {
    const prefix = uniquePrefix("direct")
    return withTables(
      prefix,
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* JobStore
        const direct = yield* countDirect
        const stored = Effect.map(store.counts, (c) => c.reduce((sum, x) => sum + x.count, 0))

        const before = direct.count()
        const first = yield* enqueue(Ping, { n: 1 })
        expect(direct.count()).toBeGreaterThan(before)
        expect(Option.isSome(yield* store.get(first.id))).toBe(true)

        // Inside a transaction: the insert joins it, so a rollback leaves nothing behind.
        const beforeTx = direct.count()
        const rolledBack = yield* Effect.either(
          sql.withTransaction(Effect.zipRight(enqueue(Ping, { n: 2 }), Effect.fail("roll back")))
        )
        expect(Either.isLeft(rolledBack)).toBe(true)
        expect(direct.count()).toBe(beforeTx)
        expect(yield* stored).toBe(1)

        // Under a tracer: the statement's own span is made, as @effect/sql makes it.
        const names: Array<string> = []
        const beforeTracer = direct.count()
        yield* Effect.withTracer(store.get(first.id), recordingTracer(names))
        expect(direct.count()).toBe(beforeTracer)
        expect(names).toContain("sql.execute")

        // Under a statement transformer: it sees the statement.
        let transformed = 0
        const beforeTransformer = direct.count()
        yield* Statement.withTransformer(store.get(first.id), (self) => {
          transformed++
          return Effect.succeed(self)
        })
        expect(direct.count()).toBe(beforeTransformer)
        expect(transformed).toBe(1)
      })
    )
  },
  60_000
)

it.live(
  "a failed statement on the direct path is an SqlError with the driver's error, and gives its connection back",
  () =>
    withRunner((runner) =>
      Effect.gen(function*() {
        // More failures than the pool has connections (one): each gave its connection back.
        for (let i = 0; i < 5; i++) {
          const failed = yield* Effect.flip(runner.run(`SELECT id FROM "lhdirect_missing" WHERE id = $1`, ["x"], false))
          expect(failed).toBeInstanceOf(SqlError)
          expect((failed.cause as { code?: string }).code).toBe("42P01")
        }
        // A parameter the driver cannot send: an error, and the connection still goes back.
        const unsendable = {
          toPostgres: () => {
            throw new Error("cannot be sent")
          }
        }
        for (let i = 0; i < 3; i++) {
          expect(yield* Effect.flip(runner.run("SELECT $1::text AS v", [unsendable], false))).toBeInstanceOf(SqlError)
        }
        // A statement with a quote in its parameter is a parameter, never SQL.
        const quoted = "o'hara\"; DROP TABLE x; --"
        const rows = yield* runner.run("SELECT $1::text AS v", [quoted], false)
        expect(rows).toEqual([{ v: quoted }])
        // `raw`: the driver's whole result, with its row count.
        const raw = (yield* runner.run("SELECT 1 AS v UNION ALL SELECT 2", [], true)) as pg.QueryResult
        expect(raw.rowCount).toBe(2)
      })
    ),
  60_000
)

it.live(
  "an interrupted statement on the direct path gives its connection back when its reply comes",
  () =>
    withRunner((runner) =>
      Effect.gen(function*() {
        const slow = yield* Effect.exit(Effect.timeout(runner.run("SELECT pg_sleep(0.3)", [], false), "30 millis"))
        expect(Exit.isFailure(slow)).toBe(true)
        // The one connection is free again once pg_sleep has replied.
        const next = yield* Effect.timeout(runner.run("SELECT 2 AS v", [], false), Duration.seconds(10))
        expect(next).toEqual([{ v: 2 }])
      })
    ),
  60_000
)

it.live(
  "a connection killed under the pool: the direct path gets a new one",
  () => {
    const prefix = uniquePrefix("direct")
    const application = `lh-direct-${prefix}`
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1, application_name: application })
    pool.on("error", () => {})
    const admin = new pg.Client({ connectionString: PG_URL })
    return Effect.gen(function*() {
      yield* (yield* Migrator.make({ prefix })).run
      const store = yield* JobStore
      const sql = yield* SqlClient.SqlClient
      expect(registeredRunner(sql)).toBeDefined()
      yield* enqueue(Ping, { n: 1 })
      yield* Effect.promise(() => admin.connect())
      const killed = yield* Effect.promise(() =>
        admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [application])
      )
      expect(killed.rowCount).toBe(1)
      // The first statement after may meet the dead connection (an SqlError); one after that runs.
      const counts = yield* Effect.retry(store.counts, { times: 1 })
      expect(counts.reduce((sum, c) => sum + c.count, 0)).toBe(1)
      yield* Effect.orDie(dropPrefixed(prefix))
    }).pipe(
      Effect.provide(Leasehold.layer({ prefix, jobs: [Ping] }).pipe(Layer.provideMerge(poolLayer(pool)))),
      Effect.ensuring(Effect.promise(async () => {
        await admin.end()
        await pool.end()
      }))
    )
  },
  60_000
)
