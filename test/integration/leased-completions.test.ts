/**
 * Leased attempts that complete at the same time (a worker's fibers finishing together), on every
 * SQL database, through the JobStore: each is written and released on its own terms — released,
 * fenced (its claim no longer ours), or lost (its lease taken over) — and a released lease with a
 * waiter hands off to it. On PostgreSQL they go as one statement (src/adapters/postgres/dialect.ts
 * `completeLeased`); elsewhere as one finish each. Statements are counted at the connection by the
 * benchmark's counting client (bench/lib/sql.ts). Tables under a prefix of their own.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { StatementCount } from "../../bench/lib/sql.ts"
import { JobLeases, JobStore } from "../../src/JobStore.ts"
import type { JobRow } from "../../src/core/model.ts"
import { define, enqueue } from "../../src/runtime/Job.ts"
import * as Leasehold from "../../src/runtime/Leasehold.ts"
import * as Migrator from "../../src/runtime/migrate.ts"
import { overCountingClient } from "../support/counting.ts"
import { dropPrefixed } from "../support/databases.ts"
import { MYSQL_URL, PG_URL, uniquePrefix } from "../support/urls.ts"

const dir = mkdtempSync(join(tmpdir(), "leasehold-leased-completions-"))
const Keyed = define({
  name: "keyed",
  schema: Schema.Struct({ key: Schema.String }),
  concurrencyKeyFor: (p) => p.key,
  perform: () => Effect.void
})
const targets = [
  { name: "postgres", url: PG_URL, statements: 1 },
  { name: "mysql", url: MYSQL_URL, statements: undefined },
  { name: "sqlite", url: join(dir, "jobs.db"), statements: undefined }
] as const

// Runs `body` with the store and the leases over tables of a prefix of its own at `url`, migrated
// first and dropped after, through the counting client.
const onDatabase = <A, E>(
  url: string,
  body: (store: JobStore["Type"], leases: JobLeases["Type"]) => Effect.Effect<A, E, JobStore | StatementCount>
) => {
  const prefix = uniquePrefix("lc")
  return Effect.gen(function*() {
    yield* (yield* Migrator.make({ prefix })).run
    const leases = yield* JobLeases
    yield* leases.ensureTable
    yield* body(yield* JobStore, leases)
    yield* dropPrefixed(prefix)
  }).pipe(
    Effect.provide(Leasehold.layer({ jobs: [Keyed], prefix }).pipe(Layer.provideMerge(Layer.empty))),
    overCountingClient(url)
  )
}

for (const { name, statements, url } of targets) {
  it.live(
    `leased completions at once on ${name}: released, fenced and lost each as alone; a waiter is handed off`,
    () => {
      // After the enqueues (on the live clock), so that every job is due.
      const T0 = Date.now() + 60_000
      return onDatabase(url, (store, leases) =>
        Effect.gen(function*() {
          for (const key of ["a", "b", "c", "d"]) yield* enqueue(Keyed, { key })
          const waiter = yield* enqueue(Keyed, { key: "a" }, { priority: -1 })
          yield* enqueue(Keyed, { key: "e" }, { priority: -2 })
          const claimed = yield* store.claimMany(
            { queues: undefined, host: "h", now: T0, claimToken: "unused", timeoutCap: undefined, hostCap: undefined },
            6
          )
          // Rows enqueued in the same millisecond tie on run_at: found by key and priority, not by
          // their place in the claim.
          expect(claimed.map((j) => JSON.parse(j.payload).key).sort()).toEqual(["a", "a", "b", "c", "d", "e"])
          const [a, b, c, d, w, e] = ([["a", 0], ["b", 0], ["c", 0], ["d", 0], ["a", -1], ["e", -2]] as const).map(
            ([key, priority]) => {
              const j = claimed.find((j) => JSON.parse(j.payload).key === key && j.priority === priority)!
              return { id: j.id, token: j.claimToken! }
            }
          )
          const take = (key: string, owner: string) =>
            leases.tryAcquireToken({ name: `key:${key}`, owner, host: "h", now: T0, expiresAt: T0 + 60_000 })
          for (const [key, job] of [["a", a], ["b", b], ["c", c], ["d", d]] as const) {
            expect(Option.isSome(yield* take(key, job!.token))).toBe(true)
          }
          // The waiter finds key a busy and waits on it; key d is taken over by another owner.
          expect(Option.isSome(yield* take("a", w!.token))).toBe(false)
          expect(yield* store.defer(w!.id, w!.token, T0, T0 + 30_000, "key:a")).toBe(true)
          yield* leases.release({ name: "key:d", owner: d!.token })
          expect(Option.isSome(yield* take("d", "thief"))).toBe(true)
          // Job e is pending again, waiting on key e, while its old attempt still owns that lease
          // (as after a reap): that attempt's completion is fenced and must not wake its own job.
          expect(Option.isSome(yield* take("e", e!.token))).toBe(true)
          expect(yield* store.defer(e!.id, e!.token, T0, T0 + 30_000, "key:e")).toBe(true)

          const counter = yield* StatementCount
          counter.reset()
          const complete = (job: { id: string; token: string }, key: string) =>
            store.finish({
              id: job.id,
              token: job.token,
              now: T0 + 1000,
              outcome: { _tag: "Complete" },
              lease: `key:${key}`
            })
          const results = yield* Effect.all(
            [
              complete(a!, "a"),
              complete(b!, "b"),
              complete({ id: c!.id, token: "not-c" }, "c"),
              complete(d!, "d"),
              complete(e!, "e")
            ],
            { concurrency: "unbounded" }
          )
          // A hand-off's wake-up notification follows from a fiber of its own: not counted.
          const sent = counter.get() - counter.notifications()
          expect(results).toEqual([
            { written: true, lease: "released" },
            { written: true, lease: "released" },
            { written: false, lease: "lost" },
            { written: true, lease: "lost" },
            { written: false, lease: "released" }
          ])
          if (statements !== undefined) expect(sent).toBe(statements)
          const status = (id: string) => Effect.map(store.get(id), (r) => Option.map(r, (j) => [j.status, j.runAt]))
          expect(yield* status(a!.id)).toEqual(Option.some(["completed", expect.any(Number)]))
          expect(yield* status(c!.id)).toEqual(Option.some(["processing", expect.any(Number)]))
          // Handed off: due at once, in its place in the queue (run_at its enqueue time, before the
          // completions' T0 + 1000; src/core/transitions.ts applyHandOff), not 30 s later.
          const enqueuedAt = Option.getOrThrow(yield* store.get(waiter.id)).createdAt
          expect(enqueuedAt).toBeLessThan(T0)
          expect(yield* status(waiter.id)).toEqual(Option.some(["pending", enqueuedAt]))
          expect(yield* leases.ownerOf("key:a")).toEqual(Option.none())
          expect(yield* leases.ownerOf("key:c")).toEqual(Option.some(c!.token))
          expect(yield* leases.ownerOf("key:d")).toEqual(Option.some("thief"))
          expect(yield* status(e!.id)).toEqual(Option.some(["pending", T0 + 30_000]))
        }))
    },
    60_000
  )
}

// Keys that an array literal must quote or escape (PostgreSQL binds the batch's ids, tokens and
// leases as arrays), and SQL in a key.
const awkward = [`a"b`, "c,d", "{e}", "f\\g", "NULL", "h'i); DROP TABLE x; --", "j k"]

for (const { name, statements, url } of targets) {
  it.live(
    `leased completions at once on ${name}: keys with quotes, commas, braces, backslashes and SQL`,
    () => {
      const T0 = Date.now() + 60_000
      return onDatabase(url, (store, leases) =>
        Effect.gen(function*() {
          for (const key of awkward) yield* enqueue(Keyed, { key })
          const claimed = yield* store.claimMany(
            { queues: undefined, host: "h", now: T0, claimToken: "unused", timeoutCap: undefined, hostCap: undefined },
            awkward.length
          )
          expect(claimed.map((j) => JSON.parse(j.payload).key).sort()).toEqual([...awkward].sort())
          const leaseOf = (j: JobRow) => `key:${JSON.parse(j.payload).key}`
          for (const j of claimed) {
            const taken = yield* leases.tryAcquireToken({
              name: leaseOf(j),
              owner: j.claimToken!,
              host: "h",
              now: T0,
              expiresAt: T0 + 60_000
            })
            expect(Option.isSome(taken)).toBe(true)
          }
          const counter = yield* StatementCount
          counter.reset()
          const results = yield* Effect.forEach(
            claimed,
            (j) =>
              store.finish({
                id: j.id,
                token: j.claimToken!,
                now: T0 + 1000,
                outcome: { _tag: "Complete" },
                lease: leaseOf(j)
              }),
            { concurrency: "unbounded" }
          )
          // A hand-off's wake-up notification follows from a fiber of its own: not counted.
          const sent = counter.get() - counter.notifications()
          expect(results).toEqual(claimed.map(() => ({ written: true, lease: "released" })))
          if (statements !== undefined) expect(sent).toBe(statements)
          for (const j of claimed) {
            expect(Option.map(yield* store.get(j.id), (r) => r.status)).toEqual(Option.some("completed"))
            expect(yield* leases.ownerOf(leaseOf(j))).toEqual(Option.none())
          }
        }))
    },
    60_000
  )
}

it("cleans up", () => rmSync(dir, { recursive: true, force: true }))
