/**
 * Exclusive jobs and concurrency keys (docs/behaviour.md §3, §8, §11) on every adapter: the lease's
 * lifetime, busy deferral with the attempt given back, lost leases, heartbeat renewal, the
 * hand-off to the next waiting job, and the lease-aware perform. TestClock drives time.
 */
import { expect, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option, Ref, Schema, TestClock } from "effect"
import { JobLeases, JobStore } from "../../src/JobStore.ts"
import { leaseWindowSeconds } from "../../src/core/lease.ts"
import type { JobRow, LeaseTransfer } from "../../src/core/model.ts"
import { define, enqueue, heartbeat, type HeldLease, JobContext } from "../../src/runtime/Job.ts"
import { processNext, processQueue } from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor, TestDatabase } from "../support/databases.ts"
import { claimInput, eventually, settle, skewed, withJobs } from "../support/jobs.ts"

const T0 = 1_791_039_632_175
const SECOND = 1000
const WINDOW = leaseWindowSeconds(300) * SECOND

const Account = Schema.Struct({ accountId: Schema.String, n: Schema.optional(Schema.Number) })

const row = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.getOrThrow))
const lease = (name: string) => Effect.flatMap(JobLeases, (l) => l.read(name))
/** The store's finish of a claimed `job`'s attempt as completed at `now`, with its `lease` (passed on with `transferTo`). */
const complete = (job: JobRow, now: number, leaseName: string, transferTo?: LeaseTransfer) =>
  Effect.flatMap(JobStore, (s) =>
    s.finish({
      id: job.id,
      token: job.claimToken!,
      now,
      outcome: { _tag: "Complete" },
      lease: leaseName,
      transferTo
    }))
/**
 * Whether the lease is held; false while the lock table does not exist yet. (Asked of the
 * catalog first: better-sqlite3's statement cache would remember a failed prepare.)
 */
const held = (name: string) =>
  Effect.flatMap(
    JobLeases,
    (l) =>
      Effect.flatMap(
        l.tableExists,
        (exists) => (exists ? Effect.map(l.read(name), Option.isSome) : Effect.succeed(false))
      )
  )

/** Job types whose perform records what it saw and optionally waits on a gate. */
const probes = Effect.gen(function*() {
  const seen = yield* Ref.make<
    ReadonlyArray<{ readonly n: number | undefined; readonly lease: Option.Option<HeldLease> }>
  >([])
  const gate = yield* Deferred.make<void>()
  const started = yield* Deferred.make<void>()
  const record = (payload: { readonly n?: number | undefined }, wait: boolean) =>
    Effect.gen(function*() {
      const ctx = yield* JobContext
      yield* Ref.update(seen, (s) => [...s, { n: payload.n, lease: Option.none() }])
      const held = yield* ctx.lease
      yield* Ref.update(seen, (s) => [...s.slice(0, -1), { n: payload.n, lease: held }])
      if (wait) {
        yield* Deferred.succeed(started, undefined)
        yield* Deferred.await(gate)
      }
    })
  const Report = define({ name: "Report", schema: Account, exclusive: true, perform: (p) => record(p, false) })
  const Nightly = define({
    name: "Nightly",
    schema: Account,
    concurrencyKey: "nightly-report",
    perform: (p) => record(p, false)
  })
  const Sync = define({
    name: "Sync",
    schema: Account,
    maxRetries: 1,
    concurrencyKey: "ignored-static",
    concurrencyKeyFor: (p) => `acct-${p.accountId}`,
    perform: (p) => record(p, false)
  })
  const SlowSync = define({
    name: "SlowSync",
    schema: Account,
    concurrencyKeyFor: (p) => `acct-${p.accountId}`,
    perform: (p) => record(p, true)
  })
  return { seen, gate, started, Report, Nightly, Sync, SlowSync }
})

export const exclusiveConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "ex"), { timeout: 180_000 })(`Exclusive jobs conformance on ${adapter}`, (it) => {
    it.effect("lease names: function key, static key, exclusive only, plain, both forms, long key", () =>
      Effect.gen(function*() {
        const p = yield* probes
        const Plain = define({ name: "Plain", schema: Account, perform: () => Effect.void })
        const longName = yield* Ref.make(Option.none<string>())
        const Long = define({
          name: "Long",
          schema: Account,
          concurrencyKey: "k".repeat(120),
          perform: () =>
            Effect.flatMap(
              JobContext,
              (ctx) => Effect.flatMap(ctx.lease, (l) => Ref.set(longName, Option.map(l, (x) => x.name)))
            )
        })
        // tables of its own: it drops the lock table
        yield* withJobs(
          [p.Report, p.Nightly, p.Sync, Plain, Long],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            // a plain job never touches the lock table: with none there, it runs and none appears
            const leases = yield* JobLeases
            yield* (yield* TestDatabase).dropTable(leases.table)
            const plain = yield* enqueue(Plain, { accountId: "x" })
            expect(yield* processNext()).toMatchObject({ _tag: "Completed", job: { id: plain.id } })
            expect(yield* leases.tableExists).toBe(false)
            yield* enqueue(p.Sync, { accountId: "a1", n: 1 })
            yield* TestClock.adjust(1)
            yield* enqueue(p.Nightly, { accountId: "x", n: 2 })
            yield* TestClock.adjust(1)
            yield* enqueue(p.Report, { accountId: "x", n: 3 })
            yield* processQueue({ limit: 0 })
            const names = (yield* Ref.get(p.seen)).map((s) => Option.map(s.lease, (l) => l.name))
            expect(names).toEqual([
              Option.some("key:acct-a1"),
              Option.some("key:nightly-report"),
              Option.some("job:Report")
            ])
            // a 120-character key is hashed to 68 characters starting key:
            yield* enqueue(Long, { accountId: "x" })
            expect(yield* processNext()).toMatchObject({ _tag: "Completed" })
            const hashed = Option.getOrThrow(yield* Ref.get(longName))
            expect(hashed).toHaveLength(68)
            expect(hashed).toMatch(/^key:[0-9a-f]{64}$/)
          }),
          { ownTables: true }
        )
      }))

    it.effect("the lease is held during perform (owner = claim token, host = worker, expiry = now + window) and released after", () =>
      Effect.gen(function*() {
        const p = yield* probes
        yield* withJobs(
          [p.SlowSync],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { id } = yield* enqueue(p.SlowSync, { accountId: "a1" })
            const fiber = yield* Effect.fork(processNext({ host: "host-1" }))
            yield* Deferred.await(p.started)
            const during = Option.getOrThrow(yield* lease("key:acct-a1"))
            const claimed = yield* row(id)
            expect(during).toEqual({
              name: "key:acct-a1",
              owner: claimed.claimToken,
              host: "host-1",
              acquiredAt: T0,
              expiresAt: T0 + WINDOW
            })
            expect((yield* Ref.get(p.seen))[0]!.lease).toEqual(
              Option.some({
                name: "key:acct-a1",
                owner: claimed.claimToken,
                expiresAt: T0 + WINDOW,
                fencingToken: expect.any(BigInt)
              })
            )
            yield* Deferred.succeed(p.gate, undefined)
            expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Completed", leaseLost: false })
            expect(yield* lease("key:acct-a1")).toEqual(Option.none())
          })
        )
      }))

    it.effect("a lease held by another host stops the run: pending, attempt given back, run_at = now + min(remaining, 30 s)", () =>
      Effect.gen(function*() {
        const p = yield* probes
        yield* withJobs(
          [p.Sync],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const leases = yield* JobLeases
            yield* leases.ensureTable
            yield* leases.tryAcquire({
              name: "key:acct-a1",
              owner: "elsewhere",
              host: "host-9",
              now: T0,
              expiresAt: T0 + 12_500
            })
            const { id } = yield* enqueue(p.Sync, { accountId: "a1" })
            const outcome = yield* processNext({ host: "host-1" })
            expect(outcome).toMatchObject({
              _tag: "Deferred",
              leaseName: "key:acct-a1",
              retryAt: T0 + 13 * SECOND,
              holder: "elsewhere"
            })
            expect(yield* Ref.get(p.seen)).toEqual([])
            expect(yield* row(id)).toMatchObject({
              status: "pending",
              attempts: 0,
              claimToken: null,
              runAt: T0 + 13 * SECOND,
              leaseName: "key:acct-a1"
            })
            // a long-held lease caps the wait at 30 s
            yield* leases.renew({ name: "key:acct-a1", owner: "elsewhere", expiresAt: T0 + 3_600_000 })
            yield* TestClock.adjust(13 * SECOND)
            expect(yield* processNext()).toMatchObject({ _tag: "Deferred", retryAt: T0 + 43 * SECOND })
          })
        )
      }))

    it.effect("a permanently busy key never uses up retries (4 polls, maxRetries 1), and processQueue counts it as skipped", () =>
      Effect.gen(function*() {
        const p = yield* probes
        yield* withJobs(
          [p.Sync],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const leases = yield* JobLeases
            yield* leases.ensureTable
            yield* leases.tryAcquire({ name: "key:acct-a1", owner: "elsewhere", now: T0, ttlMs: 3_600_000 })
            const { id } = yield* enqueue(p.Sync, { accountId: "a1" })
            for (let poll = 0; poll < 4; poll++) {
              const tally = yield* processQueue({ limit: 10 })
              expect(tally).toEqual({
                processed: 0,
                failed: 0,
                skipped: 1,
                fenced: 0,
                cancelled: 0,
                leasesLost: 0,
                errors: []
              })
              yield* TestClock.adjust(30 * SECOND)
            }
            expect(yield* row(id)).toMatchObject({ status: "pending", attempts: 0, lastError: null })
            expect(yield* Ref.get(p.seen)).toEqual([])
          })
        )
      }))

    it.effect("an expired lease is taken over and the job runs", () =>
      Effect.gen(function*() {
        const p = yield* probes
        yield* withJobs(
          [p.Report],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const leases = yield* JobLeases
            yield* leases.ensureTable
            yield* leases.tryAcquire({ name: "job:Report", owner: "crashed", now: T0 - 10 * SECOND, expiresAt: T0 - 1 })
            yield* enqueue(p.Report, { accountId: "x" })
            expect(yield* processNext()).toMatchObject({ _tag: "Completed", leaseLost: false })
            expect(yield* Ref.get(p.seen)).toHaveLength(1)
            expect(yield* lease("job:Report")).toEqual(Option.none())
          })
        )
      }))

    it.effect("heartbeat moves the lease's expiry forward, and it is released afterwards", () =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const beaten = yield* Deferred.make<void>()
        // Held open after the heartbeat, so the test reads the lease before the run ends and releases it.
        const checked = yield* Deferred.make<void>()
        const Beat = define({
          name: "Beat",
          schema: Account,
          exclusive: true,
          timeout: "10 minutes",
          perform: () =>
            Effect.gen(function*() {
              yield* Deferred.await(gate)
              yield* heartbeat
              yield* Deferred.succeed(beaten, undefined)
              yield* Deferred.await(checked)
            })
        })
        yield* withJobs(
          [Beat],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            yield* enqueue(Beat, { accountId: "x" })
            const fiber = yield* Effect.fork(processNext())
            yield* eventually(held("job:Beat"))
            expect(Option.getOrThrow(yield* lease("job:Beat")).expiresAt).toBe(T0 + 1200 * SECOND)
            yield* settle
            yield* TestClock.adjust("5 minutes")
            yield* Deferred.succeed(gate, undefined)
            yield* Deferred.await(beaten)
            expect(Option.getOrThrow(yield* lease("job:Beat")).expiresAt).toBe(T0 + 300 * SECOND + 1200 * SECOND)
            yield* Deferred.succeed(checked, undefined)
            expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Completed", leaseLost: false })
            expect(yield* lease("job:Beat")).toEqual(Option.none())
          })
        )
      }))

    it.effect("a lease taken over during perform still completes the job, reports leaseLost, and the thief's row survives", () =>
      Effect.gen(function*() {
        const p = yield* probes
        yield* withJobs(
          [p.SlowSync],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { id } = yield* enqueue(p.SlowSync, { accountId: "a1" })
            const fiber = yield* Effect.fork(processNext({ host: "host-1" }))
            yield* Deferred.await(p.started)
            const leases = yield* JobLeases
            // a host whose clock runs past the lease's expiry takes it over
            expect(
              yield* leases.tryAcquire({
                name: "key:acct-a1",
                owner: "thief",
                host: "host-2",
                now: T0 + WINDOW + 1,
                ttlMs: 60_000
              })
            ).toBe(true)
            yield* Deferred.succeed(p.gate, undefined)
            const outcome = yield* Fiber.join(fiber)
            expect(outcome).toMatchObject({ _tag: "Completed", leaseLost: true, job: { id } })
            expect((yield* row(id)).status).toBe("completed")
            expect(Option.getOrThrow(yield* lease("key:acct-a1"))).toMatchObject({ owner: "thief", host: "host-2" })
            // Recorded with its run, for the dashboard's "recently lost".
            const lost = yield* (yield* JobStore).lostLeases(10)
            expect(lost).toEqual([{
              id: expect.any(String),
              leaseName: "key:acct-a1",
              jobId: id,
              jobName: "SlowSync",
              attempt: 1,
              host: "host-1",
              fencingToken: expect.any(BigInt),
              holder: "thief",
              lostAt: T0,
              detected: "ended"
            }])
          })
        )
      }))

    it.effect("a lease taken over during a run that then times out is reported lost, and the thief's row survives", () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const Stuck = define({
          name: "Stuck",
          schema: Account,
          exclusive: true,
          timeout: "10 seconds",
          perform: () => Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)
        })
        yield* withJobs(
          [Stuck],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { id } = yield* enqueue(Stuck, { accountId: "x" })
            const fiber = yield* Effect.fork(processNext({ host: "host-1" }))
            yield* Deferred.await(started)
            const leases = yield* JobLeases
            expect(
              yield* leases.tryAcquire({
                name: "job:Stuck",
                owner: "thief",
                host: "host-2",
                now: T0 + 10 * WINDOW,
                ttlMs: 60_000
              })
            ).toBe(true)
            yield* settle
            yield* TestClock.adjust("10 seconds")
            expect(yield* Fiber.join(fiber)).toMatchObject({
              _tag: "Failed",
              willRetry: true,
              leaseLost: true,
              job: { id }
            })
            expect(Option.getOrThrow(yield* lease("job:Stuck"))).toMatchObject({ owner: "thief", host: "host-2" })
            expect(yield* (yield* JobStore).lostLeases(10)).toMatchObject([{
              leaseName: "job:Stuck",
              jobId: id,
              jobName: "Stuck",
              attempt: 1,
              host: "host-1",
              holder: "thief",
              lostAt: T0 + 10 * SECOND,
              detected: "timed out"
            }])
          })
        )
      }))

    it.effect("processQueue and tallies count a lost lease", () =>
      Effect.gen(function*() {
        const Steal = define({
          name: "Steal",
          schema: Account,
          exclusive: true,
          perform: () =>
            Effect.flatMap(JobLeases, (l) =>
              l.tryAcquire({ name: "job:Steal", owner: "thief", now: T0 + WINDOW + 1, ttlMs: 1000 }))
        })
        yield* withJobs(
          [Steal],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            yield* enqueue(Steal, { accountId: "x" })
            expect(yield* processQueue()).toEqual({
              processed: 1,
              failed: 0,
              skipped: 0,
              fenced: 0,
              cancelled: 0,
              leasesLost: 1,
              errors: []
            })
          })
        )
      }))

    it.effect("hand-off: when a run releases its key, the next waiting job runs at once, not 30 virtual seconds later", () =>
      Effect.gen(function*() {
        const p = yield* probes
        yield* withJobs(
          [p.SlowSync],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const first = yield* enqueue(p.SlowSync, { accountId: "a1", n: 1 })
            const running = yield* Effect.fork(processNext({ host: "w1" }))
            yield* Deferred.await(p.started)
            yield* TestClock.adjust(1)
            const second = yield* enqueue(p.SlowSync, { accountId: "a1", n: 2 })
            expect(yield* processNext({ host: "w2" })).toMatchObject({
              _tag: "Deferred",
              retryAt: T0 + 1 + 30 * SECOND
            })
            yield* Deferred.succeed(p.gate, undefined)
            expect(yield* Fiber.join(running)).toMatchObject({ _tag: "Completed", job: { id: first.id } })
            // no clock movement: the waiter was made due by the release
            expect((yield* row(second.id)).runAt).toBe(T0 + 1)
            expect(yield* processNext({ host: "w2" })).toMatchObject({ _tag: "Completed", job: { id: second.id } })
            expect((yield* Ref.get(p.seen)).map((s) => s.n)).toEqual([1, 2])
          })
        )
      }))

    it.effect("a finish may pass its lease to another attempt (a new fencing token, no waiter woken), or only while no job waits on it", () =>
      Effect.gen(function*() {
        const p = yield* probes
        yield* withJobs(
          [p.Sync],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const store = yield* JobStore
            const leases = yield* JobLeases
            yield* leases.ensureTable
            for (const n of [1, 2, 3]) yield* enqueue(p.Sync, { accountId: "a1", n }, { priority: 3 - n })
            const [first, second, third] = yield* store.claimMany(claimInput(T0, "c1"), 3)
            const name = "key:acct-a1"
            // The claim took the first job's lease where the dialect does (PostgreSQL): then it is found ours.
            const token = Option.getOrThrow(
              yield* leases.tryAcquireToken({
                name,
                owner: first!.claimToken!,
                host: "h",
                now: T0,
                expiresAt: T0 + WINDOW
              })
            )
            // The third waits on the key in the database.
            expect(yield* store.defer(third!.id, third!.claimToken!, T0, T0 + 30 * SECOND, name)).toBe(true)

            const passed = yield* complete(first!, T0 + 1, name, {
              owner: second!.claimToken!,
              host: "h2",
              expiresAt: T0 + 2 * WINDOW
            })
            expect(passed).toMatchObject({ written: true, lease: "released" })
            expect(passed.transferred).toBeGreaterThan(token)
            expect(Option.getOrThrow(yield* lease(name))).toMatchObject({
              owner: second!.claimToken,
              host: "h2",
              acquiredAt: T0 + 1,
              expiresAt: T0 + 2 * WINDOW
            })
            expect(yield* row(first!.id)).toMatchObject({ status: "completed" })
            expect(yield* row(third!.id)).toMatchObject({ status: "pending", runAt: T0 + 30 * SECOND })

            // Not ours any more: nothing is passed on, and the lease stays where it is.
            const again = yield* complete(first!, T0 + 2, name, {
              owner: "someone",
              host: "h3",
              expiresAt: T0 + 3 * WINDOW
            })
            expect(again).toMatchObject({ written: false, lease: "lost" })
            expect(again.transferred).toBeUndefined()
            expect(Option.getOrThrow(yield* lease(name)).owner).toBe(second!.claimToken)

            // Passed on only while no job waits on it asleep: the third does, so the new owner's
            // finish releases the lease and wakes the third instead: due in its place in the queue,
            // its run_at its enqueue time, not the hand-off's (src/core/transitions.ts applyHandOff).
            const handedOff = yield* complete(second!, T0 + 3, name, {
              owner: "someone",
              host: "h3",
              expiresAt: T0 + 3 * WINDOW,
              unlessWaiting: true
            })
            expect(handedOff).toMatchObject({ written: true, lease: "released" })
            expect(handedOff.transferred).toBeUndefined()
            expect(yield* lease(name)).toEqual(Option.none())
            expect(yield* row(third!.id)).toMatchObject({ status: "pending", runAt: T0 })
          })
        )
      }))

    it.effect("a lease passed on while other leased attempts complete at the same time is still passed on", () =>
      Effect.gen(function*() {
        const p = yield* probes
        yield* withJobs(
          [p.Sync],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const store = yield* JobStore
            const leases = yield* JobLeases
            yield* leases.ensureTable
            yield* enqueue(p.Sync, { accountId: "a1", n: 1 }, { priority: 3 })
            yield* enqueue(p.Sync, { accountId: "b1", n: 2 }, { priority: 2 })
            yield* enqueue(p.Sync, { accountId: "a1", n: 3 }, { priority: 1 })
            const [a, b, next] = yield* store.claimMany(claimInput(T0, "t1"), 3)
            for (const [job, name] of [[a!, "key:acct-a1"], [b!, "key:acct-b1"]] as const) {
              const take = { name, owner: job.claimToken!, host: "h", now: T0, expiresAt: T0 + WINDOW }
              expect(Option.isSome(yield* leases.tryAcquireToken(take))).toBe(true)
            }
            const to = { owner: next!.claimToken!, host: "h", expiresAt: T0 + WINDOW, unlessWaiting: true }
            // Sent together: concurrent leased completions share one statement where the dialect
            // batches them (PostgreSQL); the one passing its lease on must not be among them.
            const [passed, released] = yield* Effect.all(
              [complete(a!, T0 + 1, "key:acct-a1", to), complete(b!, T0 + 1, "key:acct-b1")],
              { concurrency: "unbounded" }
            )
            expect(passed).toMatchObject({ written: true, lease: "released" })
            expect(passed.transferred).toBeDefined()
            expect(Option.getOrThrow(yield* lease("key:acct-a1")).owner).toBe(next!.claimToken)
            expect(released).toMatchObject({ written: true, lease: "released" })
            expect(yield* lease("key:acct-b1")).toEqual(Option.none())
          })
        )
      }))

    it.effect("a claim by key takes one job per key, best first, skips a key's jobs up to the priority it is given, and may take some keys' alone", () =>
      Effect.gen(function*() {
        const p = yield* probes
        const Plain = define({ name: "plain-ex", schema: Account, perform: () => Effect.void })
        yield* withJobs(
          [p.Sync, Plain],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const store = yield* JobStore
            yield* (yield* JobLeases).ensureTable
            const x1 = yield* enqueue(p.Sync, { accountId: "a1", n: 1 }, { priority: 3 })
            const x2 = yield* enqueue(p.Sync, { accountId: "a1", n: 2 }, { priority: 2 })
            const y1 = yield* enqueue(p.Sync, { accountId: "b1", n: 3 }, { priority: 2 })
            const y2 = yield* enqueue(p.Sync, { accountId: "b1", n: 4 }, { priority: 1 })
            const plain = [yield* enqueue(Plain, { accountId: "-" }), yield* enqueue(Plain, { accountId: "-" })]
            const input = (token: string, skip: ReadonlyArray<{ readonly lease: string; readonly priority: number }>) =>
              claimInput(T0, token, { skip })
            const ids = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((r) => r.id).sort()
            // One per key (the best), and every job without a key.
            expect(ids(yield* store.claimMany(input("k1", []), 10))).toEqual(ids([x1, y1, ...plain]))
            // Key a1 skipped up to priority 2: x2 is not taken; b1's next is.
            expect(ids(yield* store.claimMany(input("k2", [{ lease: "key:acct-a1", priority: 2 }]), 10))).toEqual(
              ids([y2])
            )
            expect(yield* store.claimMany(input("k3", [{ lease: "key:acct-a1", priority: 2 }]), 10)).toEqual([])
            // A better job of a skipped key is taken (one per key: the best only).
            const x3 = yield* enqueue(p.Sync, { accountId: "a1", n: 5 }, { priority: 5 })
            expect(ids(yield* store.claimMany(input("k4", [{ lease: "key:acct-a1", priority: 2 }]), 10))).toEqual(
              ids([x3])
            )
            expect(ids(yield* store.claimMany(input("k5", []), 10))).toEqual(ids([x2]))
            // Without the rule, a claim takes several jobs of one key.
            const z = [
              yield* enqueue(p.Sync, { accountId: "c1", n: 6 }),
              yield* enqueue(p.Sync, { accountId: "c1", n: 7 })
            ]
            expect(ids(yield* store.claimMany(claimInput(T0, "k6"), 10))).toEqual(ids(z))
            // A claim of some keys alone (`only`) takes their best job each, and no job of another
            // key or without one, however better.
            const w = [
              yield* enqueue(p.Sync, { accountId: "b1", n: 8 }, { priority: 1 }),
              yield* enqueue(p.Sync, { accountId: "b1", n: 9 }, { priority: 4 })
            ]
            const e = [
              yield* enqueue(p.Sync, { accountId: "e1", n: 10 }, { priority: 2 }),
              yield* enqueue(p.Sync, { accountId: "e1", n: 11 }, { priority: 1 })
            ]
            const better = [
              yield* enqueue(p.Sync, { accountId: "d1", n: 12 }, { priority: 9 }),
              yield* enqueue(Plain, { accountId: "-" }, { priority: 9 })
            ]
            const only = (token: string, ...leases: ReadonlyArray<string>) =>
              claimInput(T0, token, { skip: [], only: leases })
            expect(ids(yield* store.claimMany(only("k7", "key:acct-b1"), 10))).toEqual(ids([w[1]!]))
            expect(ids(yield* store.claimMany(only("k8", "key:acct-b1"), 1))).toEqual(ids([w[0]!]))
            expect(yield* store.claimMany(only("k9", "key:acct-none"), 10)).toEqual([])
            expect(ids(yield* store.claimMany(only("k10", "key:acct-e1", "key:acct-d1", "key:acct-none"), 10))).toEqual(
              ids([e[0]!, better[0]!])
            )
            expect(ids(yield* store.claimMany(claimInput(T0, "k11"), 10))).toEqual(ids([better[1]!, e[1]!]))
          })
        )
      }))

    it.effect("a job once deferred waits on its key no longer after its claim: a later hand-off does not cut its retry backoff", () =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const started = yield* Deferred.make<void>()
        const Flaky = define({
          name: "Flaky",
          schema: Account,
          concurrencyKeyFor: (p) => `acct-${p.accountId}`,
          perform: (p) =>
            p.n === 1
              ? Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(gate))
              : p.n === 2
              ? Effect.fail("fails once")
              : Effect.void
        })
        yield* withJobs(
          [Flaky],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            yield* enqueue(Flaky, { accountId: "x", n: 1 })
            const running = yield* Effect.fork(processNext({ host: "w1" }))
            yield* Deferred.await(started)
            yield* TestClock.adjust(1)
            const second = yield* enqueue(Flaky, { accountId: "x", n: 2 })
            expect(yield* processNext({ host: "w2" })).toMatchObject({ _tag: "Deferred" })
            yield* Deferred.succeed(gate, undefined)
            expect(yield* Fiber.join(running)).toMatchObject({ _tag: "Completed" })
            // Handed off: it runs now, fails, and waits out its backoff.
            expect(yield* processNext({ host: "w2" })).toMatchObject({
              _tag: "Failed",
              willRetry: true,
              job: { id: second.id }
            })
            const retryAt = (yield* row(second.id)).runAt
            expect(retryAt).toBeGreaterThan(T0 + 1)
            // Another job of the key runs and releases it: no hand-off reaches the retrying job.
            const third = yield* enqueue(Flaky, { accountId: "x", n: 3 })
            expect(yield* processNext({ host: "w3" })).toMatchObject({ _tag: "Completed", job: { id: third.id } })
            expect(yield* row(second.id)).toMatchObject({ status: "pending", runAt: retryAt })
          })
        )
      }))

    it.effect("hand-off wakes only one of five waiters: the highest priority, then the oldest", () =>
      Effect.gen(function*() {
        const p = yield* probes
        yield* withJobs(
          [p.SlowSync],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            yield* enqueue(p.SlowSync, { accountId: "a1", n: 0 }, { priority: 100 })
            const running = yield* Effect.fork(processNext({ host: "w1" }))
            yield* Deferred.await(p.started)
            const waiters = []
            for (let n = 1; n <= 5; n++) {
              yield* TestClock.adjust(1)
              waiters.push(yield* enqueue(p.SlowSync, { accountId: "a1", n }, { priority: n === 4 ? 5 : 1 }))
              expect(yield* processNext({ host: "w2" })).toMatchObject({ _tag: "Deferred" })
            }
            yield* Deferred.succeed(p.gate, undefined)
            yield* Fiber.join(running)
            const now = T0 + 5
            const due = []
            for (const w of waiters) if ((yield* row(w.id)).runAt <= now) due.push(w.id)
            expect(due).toEqual([waiters[3]!.id])
          })
        )
      }))

    it.effect("onLeaseLost: interrupt stops perform when a heartbeat finds the lease lost; the attempt fails and is retried", () =>
      Effect.gen(function*() {
        const ran = yield* Ref.make(0)
        const Careful = define({
          name: "Careful",
          schema: Account,
          exclusive: true,
          onLeaseLost: "interrupt",
          perform: () =>
            Effect.forever(
              Effect.zipRight(Effect.zipRight(Effect.sleep("1 minute"), heartbeat), Ref.update(ran, (n) => n + 1))
            )
        })
        yield* withJobs(
          [Careful],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { id } = yield* enqueue(Careful, { accountId: "x" })
            const fiber = yield* Effect.fork(processNext())
            yield* eventually(held("job:Careful"))
            yield* settle
            yield* TestClock.adjust("1 minute")
            yield* eventually(Effect.map(Ref.get(ran), (n) => n === 1))
            const leases = yield* JobLeases
            yield* leases.tryAcquire({
              name: "job:Careful",
              owner: "thief",
              now: T0 + 60 * SECOND + WINDOW + 1,
              ttlMs: 1000
            })
            yield* settle
            yield* TestClock.adjust("1 minute")
            const outcome = yield* Fiber.join(fiber)
            expect(outcome).toMatchObject({ _tag: "Failed", willRetry: true, leaseLost: true })
            if (outcome._tag === "Failed") expect(outcome.error).toContain("LeaseLostError")
            expect(yield* Ref.get(ran)).toBe(1)
            expect(yield* row(id)).toMatchObject({ status: "pending", attempts: 1 })
            expect(Option.getOrThrow(yield* lease("job:Careful")).owner).toBe("thief")
          })
        )
      }))

    it.effect("by default a lost lease found by a heartbeat is logged, not thrown, and perform carries on", () =>
      Effect.gen(function*() {
        const Relaxed = define({
          name: "Relaxed",
          schema: Account,
          exclusive: true,
          perform: () =>
            Effect.gen(function*() {
              yield* Effect.flatMap(JobLeases, (l) =>
                l.tryAcquire({ name: "job:Relaxed", owner: "thief", now: T0 + WINDOW + 1, ttlMs: 1000 }))
              yield* heartbeat
              yield* heartbeat
            })
        })
        yield* withJobs(
          [Relaxed],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            yield* enqueue(Relaxed, { accountId: "x" })
            expect(yield* processNext()).toMatchObject({ _tag: "Completed", leaseLost: true })
          })
        )
      }))

    it.effect("a timed-out run leaves its lease to expire; the retry finds it busy and is deferred, not run in parallel", () =>
      Effect.gen(function*() {
        const runs = yield* Ref.make(0)
        const Stubborn = define({
          name: "Stubborn",
          schema: Account,
          exclusive: true,
          timeout: "10 seconds",
          // ignores interruption, as a blocked call would
          perform: () => Effect.uninterruptible(Effect.zipRight(Ref.update(runs, (n) => n + 1), Effect.sleep("1 hour")))
        })
        yield* withJobs(
          [Stubborn],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { id } = yield* enqueue(Stubborn, { accountId: "x" })
            const fiber = yield* Effect.fork(processNext())
            yield* eventually(Effect.map(Ref.get(runs), (n) => n === 1))
            yield* settle
            yield* TestClock.adjust(10 * SECOND)
            expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Failed", willRetry: true })
            expect(Option.isSome(yield* lease("job:Stubborn"))).toBe(true)
            yield* TestClock.adjust(4 * SECOND)
            expect(yield* processNext()).toMatchObject({ _tag: "Deferred", leaseName: "job:Stubborn" })
            expect(yield* Ref.get(runs)).toBe(1)
            expect(yield* row(id)).toMatchObject({ status: "pending", attempts: 1 })
          })
        )
      }))

    it.effect("a reaped exclusive job whose old attempt still holds the lease is deferred, not run in parallel", () =>
      Effect.gen(function*() {
        const p = yield* probes
        yield* withJobs(
          [p.SlowSync],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { id } = yield* enqueue(p.SlowSync, { accountId: "a1" })
            const old = yield* Effect.fork(processNext({ host: "a" }))
            yield* Deferred.await(p.started)
            const oldToken = (yield* row(id)).claimToken!
            // A host whose clock runs ahead reaps the row while the old attempt still runs; the
            // old attempt's lease is live (as a renewal from its side would keep it).
            yield* skewed(WINDOW + SECOND, processNext({ host: "b" }))
            expect((yield* row(id)).status).toBe("pending")
            yield* Effect.flatMap(
              JobLeases,
              (l) => l.renew({ name: "key:acct-a1", owner: oldToken, expiresAt: T0 + 2 * WINDOW })
            )
            expect(yield* skewed(WINDOW + 10 * SECOND, processNext({ host: "c" }))).toMatchObject({
              _tag: "Deferred",
              holder: oldToken
            })
            expect(yield* Ref.get(p.seen)).toHaveLength(1)
            expect(yield* row(id)).toMatchObject({ status: "pending", attempts: 1 })
            yield* Deferred.succeed(p.gate, undefined)
            expect(yield* Fiber.join(old)).toMatchObject({ _tag: "Fenced" })
          })
        )
      }))

    it.effect("inside a transaction, a missing lock table fails the attempt with the typed error; it is retried later and runs", () =>
      Effect.gen(function*() {
        const p = yield* probes
        // tables of its own: it drops the lock table
        yield* withJobs(
          [p.Report],
          Effect.gen(function*() {
            const db = yield* TestDatabase
            yield* TestClock.setTime(T0)
            const { id } = yield* enqueue(p.Report, { accountId: "x" })
            const leases = yield* JobLeases
            // migrations create the lock table; without it (an app that never ran them for it),
            // the first exclusive run creates it — but not inside a transaction
            yield* db.dropTable(leases.table)
            expect(yield* leases.tableExists).toBe(false)
            const inside = yield* db.withTransaction(processNext())
            expect(inside).toMatchObject({ _tag: "Failed", willRetry: true })
            if (inside._tag === "Failed") {
              expect(inside.error).toContain("LeaseTableInTransactionError")
              expect(inside.error).toContain("CREATE TABLE")
            }
            expect(yield* leases.tableExists).toBe(false)
            yield* TestClock.adjust(4 * SECOND)
            expect(yield* processNext()).toMatchObject({ _tag: "Completed", job: { id } })
            expect(yield* leases.tableExists).toBe(true)
          }),
          { ownTables: true }
        )
      }))
  })
