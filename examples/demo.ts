/**
 * The quick-start demo on embedded SQLite: one owner wins a lease, a second is refused, and
 * after the lease expires the second takes it over. Run with `npm start`.
 */
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Console, Effect, Option, TestClock, TestContext } from "effect"
import { LeaseLock } from "../src/index.ts"

const program = Effect.gen(function*() {
  const lock = yield* LeaseLock.make({ table: "leasehold_demo_locks" })
  yield* lock.ensureTable
  // Start from a clean table so the demo reads the same every time.
  for (const row of yield* lock.list) yield* lock.release({ name: row.name, owner: row.owner })

  // A virtual clock, so "after it expires" takes no real time.
  yield* TestClock.setTime(Date.parse("2026-12-03T09:00:00Z"))
  const name = "job:NightlyReport"
  const a = yield* lock.tryAcquire({ name, owner: "worker-a", host: "host-a", ttlMs: 90_000 })
  yield* Console.log(`worker-a tries ${name}: ${a ? "acquired" : "refused"}`)
  const b = yield* lock.tryAcquire({ name, owner: "worker-b", host: "host-b", ttlMs: 90_000 })
  yield* Console.log(`worker-b tries ${name}: ${b ? "acquired" : "refused (held by worker-a)"}`)

  yield* TestClock.adjust("91 seconds")
  yield* Console.log("… 91 seconds later, worker-a has not renewed; its lease expired")
  const taken = yield* lock.tryAcquire({ name, owner: "worker-b", host: "host-b", ttlMs: 90_000 })
  yield* Console.log(`worker-b tries again: ${taken ? "took it over" : "refused"}`)
  const renewed = yield* lock.renew({ name, owner: "worker-a", ttlMs: 90_000 })
  yield* Console.log(`worker-a tries to renew: ${renewed ? "renewed" : "refused (fenced: no longer the owner)"}`)
  const holder = yield* lock.read(name)
  yield* Console.log(`holder now: ${Option.match(holder, { onNone: () => "nobody", onSome: (r) => `${r.owner} on ${r.host}` })}`)
  yield* lock.release({ name, owner: "worker-b" })
  if (!a || b || !taken || renewed) return yield* Effect.dieMessage("the demo did not behave as a lease should")
})

program.pipe(
  Effect.provide(SqliteClient.layer({ filename: process.env.LEASEHOLD_DEMO_DB ?? "leasehold.db" })),
  Effect.provide(TestContext.TestContext),
  Effect.runPromise
).catch((error) => {
  console.error(String(error))
  process.exit(1)
})
