/**
 * PostgreSQL wake-ups sent after the write, not in it (src/adapters/sql/wakeupSignal.ts,
 * docs/behaviour.md §16): no statement an enqueue or a worker sends outside a transaction
 * notifies, since a notifying commit waits in one database-wide line; the notification follows
 * as a statement of its own, and a listener in another process still hears of the enqueue and of
 * a hand-off. Tables have a prefix of their own.
 */
import { expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Exit, Layer, Logger, LogLevel, Option, Schema, Scope } from "effect"
import pg from "pg"
import { type DirectRunner, registerDirect, registeredRunner } from "../../src/adapters/sql/direct.ts"
import { isOwnRing } from "../../src/adapters/localWakeups.ts"
import * as Postgres from "../../src/postgres.ts"
import { JobStore } from "../../src/ports/JobStore.ts"
import { define, enqueue } from "../../src/runtime/Job.ts"
import * as Migrator from "../../src/runtime/migrate.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { dropPrefixed } from "../support/databases.ts"
import { PG_URL, uniquePrefix } from "../support/urls.ts"

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

/** Makes job `id` wait on `lease` asleep, as a deferral leaves it: a hand-off of the lease wakes it. */
const asleepOn = (id: string, lease: string) =>
  Effect.flatMap(JobStore, (store) =>
    Effect.promise(async () => {
      const c = new pg.Client({ connectionString: PG_URL })
      await c.connect()
      try {
        await c.query(`UPDATE "${store.tables.jobs}" SET lease_name = $1 WHERE id = $2`, [lease, id])
      } finally {
        await c.end()
      }
    }))

it.live("a hand-off, and a finish that hands off, notify another process after their statements", () =>
  withRecorded((texts) =>
    Effect.scoped(Effect.gen(function*() {
      const heard = yield* listener
      const store = yield* JobStore
      const later = Date.now() + 3_600_000
      // A hand-off on its own (a release in steps, a deferral that found the lease free).
      const { id: w1 } = yield* enqueue(OneAtATime, { n: 1 }, { runAt: later })
      const lease = (yield* Effect.flatMap(store.get(w1), Effect.orDie)).claimLease!
      yield* asleepOn(w1, lease)
      let before = heard.length
      expect(yield* store.handOff(lease, Date.now())).toBe(true)
      yield* until(() => heard.length > before)
      // A finish that releases the lease and wakes the next job of the key, in one statement (the
      // job woken above out of the way: due now, it would be claimed first).
      expect(yield* store.cancel({ id: w1 }, Date.now())).toBe(1)
      const { id: a } = yield* enqueue(OneAtATime, { n: 2 })
      const { id: w2 } = yield* enqueue(OneAtATime, { n: 3 }, { runAt: later })
      yield* asleepOn(w2, lease)
      const claimed = (yield* store.claimMany({
        queues: undefined,
        host: "h",
        now: Date.now(),
        claimToken: crypto.randomUUID(),
        timeoutCap: undefined,
        hostCap: undefined
      }, 10)).filter((j) => j.id === a)
      expect(claimed).toHaveLength(1)
      before = heard.length
      const finished = yield* store.finish({
        id: a,
        token: claimed[0]!.claimToken!,
        now: Date.now(),
        outcome: { _tag: "Complete" },
        lease
      })
      expect(finished).toEqual({ written: true, lease: "released" })
      yield* until(() => heard.length > before)
      expect(Option.map(yield* store.get(w2), (j) => j.runAt < later)).toEqual(Option.some(true))
      expectNotifyingAlone(texts)
      expect(texts.some((t) => t.startsWith("WITH done AS"))).toBe(true)
    }))
  ))

it.live("a worker's statements never notify in themselves", () =>
  withRecorded((texts) =>
    Effect.scoped(Effect.gen(function*() {
      ran = 0
      for (let n = 1; n <= 6; n++) yield* enqueue(OneAtATime, { n })
      const scope = yield* Scope.make()
      yield* Layer.buildWithScope(Worker.layer({ host: "nt", concurrency: 2, pollInterval: "50 millis" }), scope)
      yield* until(() => ran >= 6)
      yield* Scope.close(scope, Exit.void)
      expectNotifyingAlone(texts)
    }))
  ))
