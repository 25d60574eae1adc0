/**
 * PostgreSQL wake-ups sent after the write, not in it (src/adapters/sql/wakeupSignal.ts,
 * docs/behaviour.md §15): no statement an enqueue or a worker sends outside a transaction
 * notifies, since a notifying commit waits in one database-wide line; the notification follows
 * as a statement of its own, and a listener in another process still hears of the enqueue and of
 * a hand-off. Tables have a prefix of their own.
 */
import { expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Exit, Layer, Logger, LogLevel, Schema, Scope } from "effect"
import pg from "pg"
import { type DirectRunner, registerDirect, registeredRunner } from "../src/adapters/sql/direct.ts"
import { isOwnRing } from "../src/adapters/localWakeups.ts"
import * as Postgres from "../src/postgres.ts"
import { JobStore } from "../src/ports/JobStore.ts"
import { define, enqueue } from "../src/runtime/Job.ts"
import * as Migrator from "../src/runtime/migrate.ts"
import * as Worker from "../src/runtime/Worker.ts"
import { dropPrefixed } from "./support/databases.ts"
import { PG_URL, uniquePrefix } from "./support/urls.ts"

let ran = 0
const OneAtATime = define({
  name: "one-at-a-time",
  schema: Schema.Struct({ n: Schema.Number }),
  exclusive: true,
  perform: () => Effect.sync(() => void ran++)
})

/** `body` over fresh tables, with every statement the store sends on the direct path recorded. */
const withRecorded = <A, E>(body: (texts: Array<string>) => Effect.Effect<A, E, any>) => {
  const prefix = uniquePrefix("notify")
  return Effect.gen(function*() {
    yield* (yield* Migrator.make({ prefix })).run
    const sql = yield* SqlClient.SqlClient
    const runner = registeredRunner(sql)!
    const texts: Array<string> = []
    const recording: DirectRunner = { run: (text, params, raw) => (texts.push(text), runner.run(text, params, raw)) }
    registerDirect(sql, recording)
    return yield* Effect.ensuring(body(texts), Effect.orDie(dropPrefixed(prefix)))
  }).pipe(
    Effect.provide(Postgres.layer({ url: PG_URL, prefix, jobs: [OneAtATime], maxConnections: 4 })),
    Logger.withMinimumLogLevel(LogLevel.Warning)
  ) as Effect.Effect<A, E | unknown>
}

/** A listener of "another process": a connection of its own on the store's channel. */
const listener = Effect.gen(function*() {
  const { channel } = (yield* JobStore).tables
  const heard: Array<string> = []
  const client = new pg.Client({ connectionString: PG_URL })
  yield* Effect.acquireRelease(Effect.promise(() => client.connect()), () => Effect.promise(() => client.end()))
  client.on("notification", (n) => void heard.push(n.payload ?? ""))
  yield* Effect.promise(() => client.query(`LISTEN "${channel}"`))
  return heard
})

const until = (check: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 500 && !check(); i++) yield* Effect.sleep("10 millis")
    expect(check()).toBe(true)
  })

/** Every statement that notifies is the bare notification; the inserts and finishes do not. */
const expectNotifyingAlone = (texts: ReadonlyArray<string>) => {
  const notifying = texts.filter((t) => t.includes("pg_notify"))
  expect(notifying.length).toBeGreaterThan(0)
  for (const t of notifying) expect(t).toMatch(/^SELECT pg_notify\(\$1, \$2\)$/)
  expect(texts.some((t) => t.startsWith("INSERT INTO"))).toBe(true)
}

it.live("an enqueue outside a transaction notifies after its insert: another process hears it, marked as this one's", () =>
  withRecorded((texts) =>
    Effect.scoped(Effect.gen(function*() {
      const heard = yield* listener
      yield* enqueue(OneAtATime, { n: 1 })
      yield* until(() => heard.length > 0)
      expect(heard.every(isOwnRing)).toBe(true)
      expectNotifyingAlone(texts)
    }))
  ))

it.live("a worker's finishes and hand-offs notify after their statements, never in them", () =>
  withRecorded((texts) =>
    Effect.scoped(Effect.gen(function*() {
      ran = 0
      const heard = yield* listener
      const store = yield* JobStore
      // A job of the key asleep on its lease, as a deferral leaves it: a hand-off wakes it.
      const { id } = yield* enqueue(OneAtATime, { n: 0 }, { runAt: Date.now() + 3_600_000 })
      const lease = (yield* Effect.flatMap(store.get(id), Effect.orDie)).claimLease!
      yield* Effect.promise(() => {
        const c = new pg.Client({ connectionString: PG_URL })
        return c.connect().then(() =>
          c.query(`UPDATE "${store.tables.jobs}" SET lease_name = $1 WHERE id = $2`, [lease, id]).finally(() => c.end())
        )
      })
      const before = heard.length
      expect(yield* store.handOff(lease, Date.now())).toBe(true)
      yield* until(() => heard.length > before)
      // A worker runs a few jobs of the key, finishing and releasing leases as it goes.
      for (let n = 1; n <= 5; n++) yield* enqueue(OneAtATime, { n })
      const scope = yield* Scope.make()
      yield* Layer.buildWithScope(Worker.layer({ host: "nt", concurrency: 2, pollInterval: "50 millis" }), scope).pipe(
        Effect.map((c) => Context.get(c, Worker.WorkerHandle))
      )
      yield* until(() => ran >= 6)
      yield* Scope.close(scope, Exit.void)
      expectNotifyingAlone(texts)
      expect(texts.some((t) => t.startsWith("WITH done AS"))).toBe(true)
    }))
  ))
