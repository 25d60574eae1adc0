/**
 * PostgreSQL's client layer names repeated statements (src/adapters/postgres/preparing.ts): what
 * it prepares, what it never does (no parameters, a `*` select list, a long text), the
 * per-connection cap, a statement whose result changed under it (ALTER TABLE … TYPE): that call
 * fails, the next runs unnamed; and one dropped under it (DEALLOCATE ALL): parsed again. Each test has one connection (maxConnections 1), so pg_prepared_statements — a
 * per-session view — shows what that connection prepared. Tables have a prefix of their own.
 */
import { expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { clientLayer } from "../../src/adapters/postgres/client.ts"
import { MAX_PER_CONNECTION, MAX_TEXT_LENGTH } from "../../src/adapters/postgres/preparing.ts"
import * as Postgres from "../../src/postgres.ts"
import { define, enqueue } from "../../src/runtime/Job.ts"
import * as Migrator from "../../src/runtime/migrate.ts"
import { JobLeases, JobStore } from "../../src/JobStore.ts"
import { dropPrefixed } from "../support/databases.ts"
import { PG_URL, uniquePrefix } from "../support/urls.ts"

const Ping = define({ name: "ping", schema: Schema.Struct({ n: Schema.Number }), perform: () => Effect.void })

/** The statements this session prepared, by text. */
const preparedTexts = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ name: string; statement: string }>`SELECT name, statement FROM pg_prepared_statements`.withoutTransform
)

/**
 * Two enqueues on fresh tables through `leasehold/postgres` with one connection, then `check`
 * of what that connection prepared; the tables are dropped afterwards.
 */
const afterTwoEnqueues = (
  options: { readonly preparedStatements?: boolean },
  check: (prefix: string, prepared: ReadonlyArray<{ name: string; statement: string }>) => void
) => {
  const prefix = uniquePrefix("prep")
  return Effect.gen(function*() {
    yield* (yield* Migrator.make({ prefix })).run
    yield* enqueue(Ping, { n: 1 })
    yield* enqueue(Ping, { n: 2 })
    check(prefix, yield* preparedTexts)
    yield* dropPrefixed(prefix)
  }).pipe(Effect.provide(Postgres.layer({ url: PG_URL, prefix, jobs: [Ping], maxConnections: 1, ...options })))
}

it.effect(
  "an enqueue repeated is parsed once: its INSERT is a named statement of the connection",
  () =>
    afterTwoEnqueues({}, (prefix, prepared) => {
      const inserts = prepared.filter((r) => r.statement.includes(`INSERT INTO "${prefix}jobs"`))
      expect(inserts).toHaveLength(1)
      expect(inserts[0]!.name).toMatch(/^lh_[0-9a-f]{40}$/)
    }),
  60_000
)

it.effect(
  "preparedStatements: false prepares nothing",
  () => afterTwoEnqueues({ preparedStatements: false }, (_, prepared) => expect(prepared).toEqual([])),
  60_000
)

it.effect("statements without parameters, and select lists with a *, are never named; COUNT(*) is", () => {
  const t = `${uniquePrefix("prep")}t`
  return Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(`CREATE TABLE "${t}" (id INT PRIMARY KEY, a INT)`)
    yield* sql.unsafe(`INSERT INTO "${t}" (id, a) VALUES (1, 10)`)
    yield* sql.unsafe(`SELECT a FROM "${t}"`)
    yield* sql.unsafe(`SELECT * FROM "${t}" WHERE id = $1`, [1])
    yield* sql.unsafe(`SELECT t.* FROM "${t}" t WHERE id = $1`, [1])
    yield* sql.unsafe(`SELECT COUNT(*) AS n FROM "${t}" WHERE id = $1`, [1])
    const texts = (yield* preparedTexts).map((r) => r.statement)
    expect(texts).toEqual([`SELECT COUNT(*) AS n FROM "${t}" WHERE id = $1`])
    yield* sql.unsafe(`DROP TABLE "${t}"`)
  }).pipe(Effect.provide(clientLayer(PG_URL, { maxConnections: 1 })))
}, 60_000)

it.effect(
  `a connection names at most ${MAX_PER_CONNECTION} texts; later ones still run, unnamed`,
  () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const results = yield* Effect.forEach(
        Array.from({ length: MAX_PER_CONNECTION + 10 }, (_, i) => i),
        (i) => sql.unsafe<{ v: number }>(`SELECT ${i} + $1::int AS v`, [1]).withoutTransform
      )
      expect(results.map((r) => r[0]!.v)).toEqual(Array.from({ length: MAX_PER_CONNECTION + 10 }, (_, i) => i + 1))
      expect(yield* preparedTexts).toHaveLength(MAX_PER_CONNECTION)
    }).pipe(Effect.provide(clientLayer(PG_URL, { maxConnections: 1 }))),
  60_000
)

it.effect("a statement whose result type changed under it fails once, then runs unnamed", () => {
  const t = `${uniquePrefix("prep")}t`
  return Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const read = sql.unsafe<{ a: unknown }>(`SELECT a FROM "${t}" WHERE id = $1`, [1]).withoutTransform
    yield* sql.unsafe(`CREATE TABLE "${t}" (id INT PRIMARY KEY, a INT)`)
    yield* sql.unsafe(`INSERT INTO "${t}" (id, a) VALUES (1, 10)`)
    expect(yield* read).toEqual([{ a: 10 }])
    yield* sql.unsafe(`ALTER TABLE "${t}" ALTER COLUMN a TYPE TEXT`)
    const refused = yield* Effect.flip(read)
    // SQLSTATE 0A000: "cached plan must not change result type"
    expect((refused.cause as { code?: string }).code).toBe("0A000")
    expect(yield* read).toEqual([{ a: "10" }])
    expect(yield* read).toEqual([{ a: "10" }])
    yield* sql.unsafe(`DROP TABLE "${t}"`)
  }).pipe(Effect.provide(clientLayer(PG_URL, { maxConnections: 1 })))
}, 60_000)

it.effect(`texts longer than ${MAX_TEXT_LENGTH} characters are never named`, () =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const long = `SELECT $1::int AS v /* ${"x".repeat(MAX_TEXT_LENGTH)} */`
    expect(yield* sql.unsafe<{ v: number }>(long, [7]).withoutTransform).toEqual([{ v: 7 }])
    expect(yield* preparedTexts).toEqual([])
  }).pipe(Effect.provide(clientLayer(PG_URL, { maxConnections: 1 }))), 60_000)

it.effect(
  "a statement dropped under the connection (DEALLOCATE ALL) fails once, then is parsed again",
  () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const read = sql.unsafe<{ v: number }>(`SELECT $1::int + 1 AS v`, [1]).withoutTransform
      expect(yield* read).toEqual([{ v: 2 }])
      yield* sql.unsafe(`DEALLOCATE ALL`)
      const dropped = yield* Effect.flip(read)
      // SQLSTATE 26000: "prepared statement … does not exist"
      expect((dropped.cause as { code?: string }).code).toBe("26000")
      expect(yield* read).toEqual([{ v: 2 }])
      expect((yield* preparedTexts).map((r) => r.statement)).toEqual([`SELECT $1::int + 1 AS v`])
    }).pipe(Effect.provide(clientLayer(PG_URL, { maxConnections: 1 }))),
  60_000
)

const Keyed = define({
  name: "keyed",
  schema: Schema.Struct({ key: Schema.String }),
  concurrencyKeyFor: (p) => p.key,
  perform: () => Effect.void
})

it.effect(
  "leased completions at once are one named statement whatever their number (the attempts bound as arrays)",
  () => {
    const prefix = uniquePrefix("prep")
    return Effect.gen(function*() {
      yield* (yield* Migrator.make({ prefix })).run
      const store = yield* JobStore
      const leases = yield* JobLeases
      yield* leases.ensureTable
      const now = Date.now() + 60_000
      // The batch statement (one finish on its own is another, `… AS written`).
      const batchTexts = Effect.map(
        preparedTexts,
        (rows) =>
          rows.map((r) => r.statement).filter((t) => t.startsWith("WITH done AS") && t.includes("'done' AS kind"))
      )
      const seen: Array<ReadonlyArray<string>> = []
      // 60 at once (as a list of placeholders, ~59 ran past MAX_TEXT_LENGTH and went unnamed),
      // then 3: the same named text.
      for (const size of [60, 3]) {
        for (let i = 0; i < size; i++) yield* enqueue(Keyed, { key: `k${size}-${i}` })
        const claimed = yield* store.claimMany(
          { queues: undefined, host: "h", now, claimToken: "unused", timeoutCap: undefined, hostCap: undefined },
          size
        )
        expect(claimed).toHaveLength(size)
        const finished = yield* Effect.forEach(claimed, (j) => {
          const lease = `key:${JSON.parse(j.payload).key}`
          return Effect.zipRight(
            leases.tryAcquireToken({ name: lease, owner: j.claimToken!, host: "h", now, expiresAt: now + 60_000 }),
            store.finish({ id: j.id, token: j.claimToken!, now, outcome: { _tag: "Complete" }, lease })
          )
        }, { concurrency: "unbounded" })
        expect(finished.every((f) => f.written && f.lease === "released")).toBe(true)
        seen.push(yield* batchTexts)
      }
      expect(seen[0]).toHaveLength(1)
      expect(seen[1]).toEqual(seen[0])
      yield* dropPrefixed(prefix)
    }).pipe(Effect.provide(Postgres.layer({ url: PG_URL, prefix, jobs: [Keyed], maxConnections: 1 })))
  },
  60_000
)

it.effect("a worker's read of its host row (its drain state, before a claim) is a named statement", () => {
  const prefix = uniquePrefix("prep")
  return Effect.gen(function*() {
    yield* (yield* Migrator.make({ prefix })).run
    const store = yield* JobStore
    yield* store.getHost("h")
    yield* store.getHost("h")
    const reads = (yield* preparedTexts).filter((r) => r.statement.includes(`FROM "${prefix}hosts" WHERE host =`))
    expect(reads).toHaveLength(1)
    yield* dropPrefixed(prefix)
  }).pipe(Effect.provide(Postgres.layer({ url: PG_URL, prefix, jobs: [Ping], maxConnections: 1 })))
}, 60_000)
