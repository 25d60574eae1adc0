/**
 * The testing kit (src/testing.ts), used the way an app's own tests would use it; this file is
 * also the example in docs/testing.md. Every test runs on the in-memory store and on in-memory
 * SQLite, under the TestClock: no test waits on real time.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Ref, Schema, TestClock } from "effect"
import { Job } from "../../src/index.ts"
import {
  advance,
  drain,
  job,
  JobLeases,
  jobs,
  type JobStore,
  TestLeasehold,
  type TestServices
} from "../../src/testing.ts"

const T0 = Date.UTC(2026, 11, 3, 9, 0, 0) // any fixed instant; the TestClock starts at 0 otherwise
const SECOND = 1000

// ---------------------------------------------------------------------------------------------
// The app's job types under test. `runs` records every perform, so a test can see what ran.

const runs = Ref.unsafeMake<ReadonlyArray<string>>([])

/** One sync per account at a time, across every worker. */
const SyncAccount = Job.define({
  name: "SyncAccount",
  schema: Schema.Struct({ accountId: Schema.String }),
  concurrencyKeyFor: (p) => `account-${p.accountId}`,
  perform: (p) => Ref.update(runs, (r) => [...r, `sync ${p.accountId}`])
})

/** Fails its first two runs, then succeeds; retried with the default backoff (4 s, 8 s, …). */
const SendReceipt = Job.define({
  name: "SendReceipt",
  schema: Schema.Struct({ orderId: Schema.Number }),
  perform: (p) =>
    Effect.gen(function*() {
      const { attempt } = yield* Job.JobContext
      yield* Ref.update(runs, (r) => [...r, `receipt ${p.orderId} attempt ${attempt}`])
      if (attempt <= 2) return yield* Effect.fail(new Error("mail server unavailable"))
    })
})

/** Fans out: one SyncAccount per account. Its perform needs `JobStore`; the test layer provides it. */
const SyncAll = Job.define({
  name: "SyncAll",
  schema: Schema.Struct({ accountIds: Schema.Array(Schema.String) }),
  perform: (p) =>
    Effect.forEach(p.accountIds, (accountId) => Job.enqueue(SyncAccount, { accountId }), { discard: true })
})

/** A job that enqueues itself forever (a bug), to show that `drain` stops it. */
const Forever: Job.JobType<"Forever", { readonly n: number }, { readonly n: number }, JobStore> = Job.define({
  name: "Forever",
  schema: Schema.Struct({ n: Schema.Number }),
  perform: (p) => Job.enqueue(Forever, { n: p.n + 1 })
})

const jobTypes = [SyncAccount, SendReceipt, SyncAll, Forever] as const

// ---------------------------------------------------------------------------------------------

const suite = (name: string, testLayer: () => Layer.Layer<TestServices>) =>
  describe(`testing kit on ${name}`, () => {
    const run = <A, E>(effect: Effect.Effect<A, E, TestServices>) =>
      Effect.gen(function*() {
        yield* Ref.set(runs, [])
        yield* TestClock.setTime(T0)
        return yield* effect
      }).pipe(Effect.provide(testLayer()))

    it.effect("a keyed job whose lease is held elsewhere is deferred, then runs once the holder's lease expires", () =>
      run(Effect.gen(function*() {
        // Another worker holds account a1's key for 12.5 s more, and account b2's for an hour.
        const leases = yield* JobLeases
        yield* leases.tryAcquire({ name: "key:account-a1", owner: "other-worker", now: T0, expiresAt: T0 + 12_500 })
        yield* leases.tryAcquire({ name: "key:account-b2", owner: "other-worker", now: T0, ttlMs: 3_600_000 })
        const a1 = yield* Job.enqueue(SyncAccount, { accountId: "a1" })
        yield* TestClock.adjust(1) // so the two jobs are claimed in a known order (oldest first)
        const b2 = yield* Job.enqueue(SyncAccount, { accountId: "b2" })

        // Busy: perform does not run; each job waits min(the holder's remaining time, 30 s),
        // rounded up to whole seconds, with its attempt given back.
        const now = T0 + 1
        expect(yield* drain()).toMatchObject([
          {
            _tag: "Deferred",
            job: { id: a1.id },
            leaseName: "key:account-a1",
            holder: "other-worker",
            retryAt: now + 13 * SECOND
          },
          {
            _tag: "Deferred",
            job: { id: b2.id },
            leaseName: "key:account-b2",
            holder: "other-worker",
            retryAt: now + 30 * SECOND
          }
        ])
        expect(yield* Ref.get(runs)).toEqual([])
        expect(yield* job(a1.id)).toMatchObject({ status: "pending", attempts: 0, runAt: now + 13 * SECOND })

        // Not due a millisecond early.
        expect(yield* advance(13 * SECOND - 1)).toEqual([])
        // At 13 s a1's holder has expired (12.5 s), so a1 runs; b2's holder still has the key.
        expect(yield* advance(1)).toMatchObject([{
          _tag: "Completed",
          job: { id: a1.id, attempt: 1 },
          leaseLost: false
        }])
        expect(yield* Ref.get(runs)).toEqual(["sync a1"])
        expect(yield* advance(17 * SECOND)).toMatchObject([{ _tag: "Deferred", job: { id: b2.id } }])
        expect(yield* jobs({ status: "completed" })).toMatchObject([{ id: a1.id, attempts: 1 }])
      })))

    it.effect("a failing job is retried after 4 s, then 8 s (default backoff), and succeeds on its third run", () =>
      run(Effect.gen(function*() {
        const { id } = yield* Job.enqueue(SendReceipt, { orderId: 7 })
        expect(yield* drain()).toMatchObject([
          { _tag: "Failed", job: { id, attempt: 1 }, willRetry: true, retryAt: T0 + 4 * SECOND }
        ])
        expect(yield* job(id)).toMatchObject({
          status: "pending",
          attempts: 1,
          lastError: "Error: mail server unavailable"
        })

        expect(yield* advance(4 * SECOND - 1)).toEqual([])
        expect(yield* advance(1)).toMatchObject([
          { _tag: "Failed", job: { id, attempt: 2 }, willRetry: true, retryAt: T0 + 12 * SECOND }
        ])
        expect(yield* advance(8 * SECOND - 1)).toEqual([])
        expect(yield* advance(1)).toMatchObject([{ _tag: "Completed", job: { id, attempt: 3 } }])

        expect(yield* Ref.get(runs)).toEqual(["receipt 7 attempt 1", "receipt 7 attempt 2", "receipt 7 attempt 3"])
        expect(yield* job(id)).toMatchObject({ status: "completed", attempts: 3, completedAt: T0 + 12 * SECOND })
      })))

    it.effect("a job that enqueues others: one drain runs it and everything it enqueued", () =>
      run(Effect.gen(function*() {
        const parent = yield* Job.enqueue(SyncAll, { accountIds: ["a1", "b2", "c3"] })
        const results = yield* drain()
        expect(results.map((r) => r._tag)).toEqual(["Completed", "Completed", "Completed", "Completed"])
        expect(results[0]).toMatchObject({ job: { id: parent.id, name: "SyncAll" } })
        // the three children were enqueued in the same millisecond: their order is not defined
        expect([...(yield* Ref.get(runs))].sort()).toEqual(["sync a1", "sync b2", "sync c3"])
        expect(yield* jobs({ name: "SyncAccount", status: "completed" })).toHaveLength(3)
        expect(yield* drain()).toEqual([])
      })))

    it.effect("drain dies on a job that keeps enqueuing itself, instead of hanging the test", () =>
      run(Effect.gen(function*() {
        yield* Job.enqueue(Forever, { n: 0 })
        const exit = yield* Effect.exit(drain({ maxTurns: 5 }))
        expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
        if (Exit.isFailure(exit)) expect(Cause.pretty(exit.cause)).toContain("still due after 5 turns")
        expect(yield* jobs({ name: "Forever", status: "completed" })).toHaveLength(5)
      })))
  })

suite("the in-memory store", () => TestLeasehold.layer({ jobs: jobTypes }))
suite("in-memory SQLite", () => TestLeasehold.sqliteLayer({ jobs: jobTypes }))
