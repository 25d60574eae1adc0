/**
 * The lease a job's attempts take, stored at enqueue (migration 11, `claim_lease`) and, on
 * PostgreSQL, taken by the claim statement itself (src/adapters/postgres/dialect.ts
 * `leases: inClaim`): on every SQL database, through the JobStore and the worker. The claim takes a
 * free or expired lease for the best job of each key and no other; an attempt that ends before
 * perform (unknown type, garbled payload, cancelled while it waited) gives the lease back; a job
 * whose type's key changed since its enqueue gives the old lease back and takes the new one.
 * Elsewhere no claim takes a lease, and every observable outcome is the same. Tables under a
 * prefix of their own.
 */
import { expect, it } from "@effect/vitest"
import type { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { isClaimLeaseFresh } from "../../src/core/lease.ts"
import { liveLimits } from "../../src/runtime/worker/liveLimits.ts"
import { JobLeases, JobStore } from "../../src/JobStore.ts"
import { define, enqueue, JobContext } from "../../src/runtime/Job.ts"
import * as Leasehold from "../../src/runtime/Leasehold.ts"
import * as Migrator from "../../src/runtime/migrate.ts"
import { processNext } from "../../src/runtime/Worker.ts"
import { runClaimed } from "../../src/runtime/worker/attempt.ts"
import { resolve } from "../../src/runtime/worker/options.ts"
import { StatementCount } from "../../bench/lib/sql.ts"
import { overCountingClient } from "../support/counting.ts"
import { dropPrefixed } from "../support/databases.ts"
import { MYSQL_URL, PG_URL, uniquePrefix } from "../support/urls.ts"

const dir = mkdtempSync(join(tmpdir(), "leasehold-claim-leases-"))
const Keyed = define({
  name: "keyed",
  schema: Schema.Struct({ key: Schema.String }),
  concurrencyKeyFor: (p) => p.key,
  perform: () => Effect.void
})
// Its perform records the lease it holds (and that lease's fencing token).
let performedWith: Option.Option<string> = Option.none()
let performedToken: bigint | undefined
const Watched = define({
  name: "watched",
  schema: Schema.Struct({ key: Schema.String }),
  concurrencyKeyFor: (p) => p.key,
  perform: () =>
    Effect.flatMap(
      Effect.flatMap(JobContext, (ctx) => ctx.lease),
      (l) =>
        Effect.sync(() => {
          performedWith = Option.map(l, (x) => x.name)
          performedToken = Option.getOrUndefined(Option.map(l, (x) => x.fencingToken))
        })
    )
})
const Plain = define({ name: "plain", schema: Schema.Struct({}), perform: () => Effect.void })
// Enqueued by "another version of the app": no worker here knows it.
const Stranger = define({
  name: "stranger",
  schema: Schema.Struct({}),
  concurrencyKey: "s",
  perform: () => Effect.void
})
const Sibling = define({ name: "sibling", schema: Schema.Struct({}), concurrencyKey: "s", perform: () => Effect.void })
const targets = [
  { name: "postgres", url: PG_URL, claimTakes: true },
  { name: "mysql", url: MYSQL_URL, claimTakes: false },
  { name: "sqlite", url: join(dir, "jobs.db"), claimTakes: false }
] as const
const input = (now: number) => ({
  queues: undefined,
  host: "h",
  now,
  // A claim's single row (MySQL: its first row) carries the caller's token: one of its own each.
  claimToken: crypto.randomUUID(),
  timeoutCap: undefined,
  hostCap: undefined
})

const layer = (prefix: string) =>
  Leasehold.layer({ jobs: [Keyed, Plain, Sibling, Watched], prefix }).pipe(Layer.provideMerge(Layer.empty))

/** `body` on `url`, over freshly migrated tables under a prefix of its own, dropped afterwards. */
const onOwnTables = <A, E>(
  url: string,
  body: Effect.Effect<A, E, Layer.Layer.Success<ReturnType<typeof layer>> | SqlClient.SqlClient | StatementCount>
) => {
  const prefix = uniquePrefix("cl")
  return Effect.gen(function*() {
    yield* (yield* Migrator.make({ prefix })).run
    const result = yield* body
    yield* dropPrefixed(prefix)
    return result
  }).pipe(Effect.provide(layer(prefix)), overCountingClient(url))
}

for (const { claimTakes, name, url } of targets) {
  it.live(
    `${name}: the lease is stored at enqueue; ${
      claimTakes ? "the claim takes free and expired ones, once per key" : "the claim takes none"
    }`,
    () => {
      // After the enqueues (on the live clock), so that every job is due.
      const T0 = Date.now() + 60_000
      return onOwnTables(
        url,
        Effect.gen(function*() {
          const store = yield* JobStore
          const leases = yield* JobLeases
          const lease = (key: string, owner: string, expiresAt: number) =>
            leases.tryAcquireToken({ name: `key:${key}`, owner, host: "other", now: T0 - 120_000, expiresAt })
          // Key c is held until later; key d was held, and expired before T0.
          expect(Option.isSome(yield* lease("c", "holder", T0 + 600_000))).toBe(true)
          const old = yield* lease("d", "old", T0 - 1)
          expect(Option.isSome(old)).toBe(true)
          const a1 = yield* enqueue(Keyed, { key: "a" }, { priority: 5 })
          const a2 = yield* enqueue(Keyed, { key: "a" }, { priority: 4 })
          for (const key of ["b", "c", "d"]) yield* enqueue(Keyed, { key }, { priority: 3 })
          const plain = yield* enqueue(Plain, {}, { priority: 2 })
          expect(Option.map(yield* store.get(a1.id), (r) => r.claimLease)).toEqual(Option.some("key:a"))
          expect(Option.map(yield* store.get(plain.id), (r) => r.claimLease)).toEqual(Option.some(null))

          const claimed = yield* store.claimMany(input(T0), 6)
          const byKey = new Map(claimed.map((j) => [j.id === a2.id ? "a2" : j.claimLease ?? "plain", j]))
          expect([...byKey.keys()].sort()).toEqual(["a2", "key:a", "key:b", "key:c", "key:d", "plain"])
          const tokenOf = (k: string) => byKey.get(k)!.claimToken!
          if (claimTakes) {
            for (const k of ["key:a", "key:b", "key:d"]) {
              const j = byKey.get(k)!
              expect(j.leaseTaken).toMatchObject({ name: k, expiresAt: j.staleAt })
              expect(yield* leases.ownerOf(k)).toEqual(Option.some(j.claimToken))
            }
            // Fencing tokens only grow: the take-over of d is above the expired holder's.
            expect(byKey.get("key:d")!.leaseTaken!.fencingToken).toBeGreaterThan(Option.getOrThrow(old))
            for (const k of ["a2", "key:c", "plain"]) expect(byKey.get(k)!.leaseTaken).toBeUndefined()
          } else {
            for (const j of claimed) expect(j.leaseTaken).toBeUndefined()
            for (const k of ["key:a", "key:b"]) expect(yield* leases.ownerOf(k)).toEqual(Option.none())
          }
          expect(yield* leases.ownerOf("key:c")).toEqual(Option.some("holder"))
          expect(yield* leases.ownerOf("key:d")).toEqual(Option.some(claimTakes ? tokenOf("key:d") : "old"))
        })
      )
    },
    60_000
  )

  it.live(`${name}: an attempt that ends before perform gives its lease back; a changed key takes the new one`, () => {
    return onOwnTables(
      url,
      Effect.gen(function*() {
        const store = yield* JobStore
        const leases = yield* JobLeases
        const free = (key: string) => Effect.map(leases.ownerOf(key), Option.isNone)

        // An unknown type: failed, and its lease is free for the next job of its key.
        const stranger = yield* enqueue(Stranger, {}, { priority: 9 })
        const unknown = yield* processNext({ host: "h" })
        expect(unknown).toMatchObject({ _tag: "Failed", job: { id: stranger.id } })
        expect(yield* free("key:s")).toBe(true)
        const sibling = yield* enqueue(Sibling, {})
        expect(yield* processNext({ host: "h" })).toMatchObject({ _tag: "Completed", job: { id: sibling.id } })

        // A stored payload that no longer decodes, and a key changed since the enqueue.
        const now = Date.now()
        const row = (id: string, name: string, payload: string, claimLease: string) => ({
          id,
          name,
          queue: "default",
          payload,
          priority: 5,
          maxRetries: 0,
          claimTimeout: 60,
          uniqueKey: id,
          runAt: now,
          now,
          claimLease
        })
        yield* store.insert(row(crypto.randomUUID(), "keyed", "{not json", "key:g"))
        const garbled = yield* processNext({ host: "h" })
        expect(garbled).toMatchObject({ _tag: "Failed", willRetry: false })
        expect(yield* free("key:g")).toBe(true)
        const changed = crypto.randomUUID()
        yield* store.insert(row(changed, "watched", JSON.stringify({ key: "new" }), "key:old"))
        expect(yield* processNext({ host: "h" })).toMatchObject({ _tag: "Completed", job: { id: changed } })
        expect(performedWith).toEqual(Option.some("key:new"))
        expect(yield* free("key:old")).toBe(true)
        expect(yield* free("key:new")).toBe(true)

        // Claimed ahead, then cancelled before it started: not run, and its lease is free.
        const waiting = yield* enqueue(Keyed, { key: "w" })
        const [job] = yield* store.claimMany(input(Date.now()), 1)
        expect(job!.id).toBe(waiting.id)
        if (claimTakes) expect(yield* leases.ownerOf("key:w")).toEqual(Option.some(job!.claimToken))
        expect(yield* store.cancel({ id: waiting.id }, Date.now())).toBe(1)
        const o = yield* resolve({ host: "h" })
        expect(yield* runClaimed(job!, o, { recheck: true })).toMatchObject({ _tag: "Cancelled" })
        expect(yield* free("key:w")).toBe(true)
      })
    )
  }, 60_000)

  it.live(
    `${name}: a job that waited past its lease's window does not run on it; one cancelled meanwhile reports nothing lost`,
    () => {
      return onOwnTables(
        url,
        Effect.gen(function*() {
          const store = yield* JobStore
          const leases = yield* JobLeases
          // Two jobs of key x (and two of key y) claimed by a worker long ago (its lease window, 300 s
          // + max(60 s, 300 s) for the default timeout, long over), while a runner kept them waiting.
          const now = Date.now()
          const runAt = now - 900_000
          const late = yield* Effect.forEach(["x", "y"], (key) => enqueue(Keyed, { key }, { runAt }))
          const later = yield* Effect.forEach(["x", "y"], (key) => enqueue(Keyed, { key }, { runAt, priority: -1 }))
          const old = yield* store.claimMany(input(now - 800_000), 2)
          expect(old.map((j) => j.id).sort()).toEqual(late.map((j) => j.id).sort())
          // Another worker claims the later jobs now: their claim (or attempt) takes the expired leases over.
          const fresh = yield* store.claimMany(input(now), 2)
          expect(fresh.map((j) => j.id).sort()).toEqual(later.map((j) => j.id).sort())
          for (const j of fresh) {
            // Where the claim took no lease, the later attempt takes it as its own would.
            const key = `key:${JSON.parse(j.payload).key}`
            if (j.leaseTaken === undefined) {
              const taken = yield* leases.tryAcquireToken({
                name: key,
                owner: j.claimToken!,
                host: "h",
                now,
                expiresAt: now + 60_000
              })
              expect(Option.isSome(taken)).toBe(true)
            }
            expect(yield* leases.ownerOf(key)).toEqual(Option.some(j.claimToken))
          }
          const o = yield* resolve({ host: "h" })
          const [x, y] = ["x", "y"].map((k) => old.find((j) => JSON.parse(j.payload).key === k)!)
          const holderOf = (k: string) => leases.ownerOf(`key:${k}`)
          const yHolder = yield* holderOf("y")
          // x: its claim stands, but its lease is another's now: deferred, not run beside it.
          expect(yield* runClaimed(x!, o, { recheck: true })).toMatchObject({ _tag: "Deferred", leaseName: "key:x" })
          // y: cancelled while it waited: not run, nothing reported lost, the new holder keeps its lease.
          expect(yield* store.cancel({ id: y!.id }, Date.now())).toBe(1)
          expect(yield* runClaimed(y!, o, { recheck: true })).toMatchObject({ _tag: "Cancelled", leaseLost: false })
          expect(yield* holderOf("y")).toEqual(yHolder)
          expect(yield* store.lostLeases(10)).toEqual([])
        })
      )
    },
    60_000
  )
}

// Where the claim takes the lease: an attempt that starts more than a second after its claim
// (src/core/lease.ts isClaimLeaseFresh) renews that lease, owner-fenced, and runs on it: the same
// acquisition (its fencing token), one statement, not a second acquisition of its own lease.
it.live("postgres: a claimed lease no longer fresh is renewed before perform, not taken again", () =>
  onOwnTables(
    PG_URL,
    Effect.gen(function*() {
      const store = yield* JobStore
      const leases = yield* JobLeases
      const counter = yield* StatementCount
      const job = yield* enqueue(Watched, { key: "r" }, { runAt: Date.now() - 60_000 })
      // Claimed 5 s ago (its lease's window counted from then): past the freshness second.
      const claimedAt = Date.now() - 5_000
      const [claimed] = yield* store.claimMany(input(claimedAt), 1)
      expect(claimed!.id).toBe(job.id)
      const taken = claimed!.leaseTaken!
      expect(taken.name).toBe("key:r")
      expect(isClaimLeaseFresh(taken.expiresAt, Date.now(), claimed!.claimTimeout)).toBe(false)
      const o = yield* resolve({ host: "h" })
      performedToken = undefined
      // The live limits are read at most once a second per store (src/runtime/worker/liveLimits.ts):
      // read here first, so that read is not counted as this attempt's.
      yield* liveLimits(store, Date.now())
      counter.reset()
      expect(yield* runClaimed(claimed!, o)).toMatchObject({ _tag: "Completed", job: { id: job.id } })
      // The renewal and the completion (which releases the lease): two statements. Taking the
      // lease again costs more; using it unrenewed, one fewer. The enqueue's wake-up
      // notification follows it from a fiber of its own, and may land here: not the attempt's.
      expect(counter.get() - counter.notifications()).toBe(2)
      expect(performedToken).toBe(taken.fencingToken)
      expect(yield* leases.ownerOf("key:r")).toEqual(Option.none())
    })
  ), 60_000)

it("cleans up", () => rmSync(dir, { recursive: true, force: true }))
