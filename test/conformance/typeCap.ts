/**
 * A cap over a job type (`typeConcurrencyLimit`, docs/flow-control.md) on every adapter, beside
 * the per-key limit: both hold at once; a job over the cap is deferred waiting on the cap with its
 * attempt and its key's lease given back, and handed off when a slot frees; the slot is released
 * after success and failure, by a stopping worker's hand-back, left to expire after a timeout, and
 * reported lost when taken over. TestClock drives time.
 */
import { expect, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option, Ref, Schema, TestClock } from "effect"
import { JobLeases, JobStore } from "../../src/JobStore.ts"
import { capLeaseName, leaseWindowSeconds } from "../../src/core/lease.ts"
import { define, enqueue } from "../../src/runtime/Job.ts"
import { processNext } from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor } from "../support/databases.ts"
import { eventually, withJobs } from "../support/jobs.ts"

const T0 = 1_791_039_632_175
const SECOND = 1000

const Account = Schema.Struct({ account: Schema.String, n: Schema.Number, fail: Schema.optional(Schema.Boolean) })

const row = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.getOrThrow))
const leaseRow = (name: string) => Effect.flatMap(JobLeases, (l) => l.read(name))

/** Runs recorded as start and end on one counter, and a gate every perform waits on. */
const probe = Effect.gen(function*() {
  const seq = yield* Ref.make(0)
  const running = yield* Ref.make(0)
  const runs = yield* Ref.make<ReadonlyArray<{ readonly n: number; readonly start: number; readonly end: number }>>([])
  const gate = yield* Deferred.make<void>()
  const perform = ({ fail, n }: typeof Account.Type) =>
    Effect.gen(function*() {
      const start = yield* Ref.getAndUpdate(seq, (x) => x + 1)
      yield* Ref.update(running, (x) => x + 1)
      yield* Deferred.await(gate)
      yield* Effect.yieldNow()
      yield* Ref.update(running, (x) => x - 1)
      const end = yield* Ref.getAndUpdate(seq, (x) => x + 1)
      yield* Ref.update(runs, (r) => [...r, { n, start, end }])
      if (fail === true) return yield* Effect.fail("boom")
    })
  /** The most runs in progress at once, from the recorded starts and ends. */
  const most = Effect.map(Ref.get(runs), (all) => {
    const events = all.flatMap((r) => [{ at: r.start, d: 1 }, { at: r.end, d: -1 }]).sort((a, b) => a.at - b.at)
    let now = 0
    let top = 0
    for (const e of events) top = Math.max(top, now += e.d)
    return top
  })
  return { gate, most, perform, running, runs }
})

export const typeCapConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "tc"), { timeout: 120_000 })(`Type caps on ${adapter}`, (it) => {
    it.effect("a cap of 2 over 3 keys: 2 run, the third waits on the cap with its key's lease given back, and is handed off when one ends", () =>
      Effect.gen(function*() {
        const p = yield* probe
        const Sync = define({
          name: "CapSync",
          schema: Account,
          concurrencyKeyFor: ({ account }) => account,
          typeConcurrencyLimit: 2,
          perform: p.perform
        })
        yield* withJobs(
          [Sync],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const accountOf = new Map<string, string>()
            for (const [n, account] of ["a", "b", "c"].entries()) {
              accountOf.set((yield* enqueue(Sync, { account, n })).id, account)
            }
            const fibers = yield* Effect.forEach([1, 2, 3], (h) => Effect.fork(processNext({ host: `h${h}` })))
            yield* eventually(Effect.map(
              Effect.forEach(fibers, (f) => Effect.map(f.poll, Option.isSome)),
              (done) => done.filter(Boolean).length === 1
            ))
            expect(yield* Ref.get(p.running)).toBe(2)
            const deferred = (yield* Effect.forEach(fibers, (f) => f.poll)).flatMap((o) =>
              Option.isSome(o) && o.value._tag === "Success" ? [o.value.value] : []
            )[0]!
            expect(deferred).toMatchObject({ _tag: "Deferred", leaseName: capLeaseName("CapSync") })
            const waiting = yield* row(deferred._tag === "Deferred" ? deferred.job.id : "-")
            expect(waiting).toMatchObject({ status: "pending", attempts: 0, leaseName: "cap:CapSync" })
            // its key's lease went back: free for its key's next job
            expect(Option.isNone(yield* leaseRow(`key:${accountOf.get(waiting.id)}`))).toBe(true)
            yield* Deferred.succeed(p.gate, undefined)
            yield* Effect.forEach(fibers, Fiber.join)
            // both slots released, the waiter handed off: due now, without waiting for its delay
            expect(Option.isNone(yield* leaseRow("cap:CapSync"))).toBe(true)
            expect(Option.isNone(yield* leaseRow("cap:CapSync#2"))).toBe(true)
            expect((yield* row(waiting.id)).runAt).toBeLessThanOrEqual(T0)
            expect(yield* processNext({ host: "h4" })).toMatchObject({ _tag: "Completed", job: { id: waiting.id } })
            expect(yield* p.most).toBe(2)
          })
        )
      }))

    it.effect("30 jobs over 10 keys, 3 per key and 4 in all, 30 workers at a time: never more than 4 at once, never 2 of a key with limit 1 beside it; all complete", () =>
      Effect.gen(function*() {
        const p = yield* probe
        const perKey = yield* Ref.make(new Map<string, number>())
        const worstKey = yield* Ref.make(0)
        const Pool = define({
          name: "CapPool",
          schema: Account,
          concurrencyKeyFor: ({ account }) => account,
          concurrencyLimit: 3,
          typeConcurrencyLimit: 4,
          perform: (payload) =>
            Effect.acquireUseRelease(
              Ref.modify(perKey, (m) => {
                const now = (m.get(payload.account) ?? 0) + 1
                return [now, new Map(m).set(payload.account, now)]
              }).pipe(Effect.tap((now) => Ref.update(worstKey, (w) => Math.max(w, now)))),
              () => p.perform(payload),
              () => Ref.update(perKey, (m) => new Map(m).set(payload.account, m.get(payload.account)! - 1))
            )
        })
        yield* withJobs(
          [Pool],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            yield* Deferred.succeed(p.gate, undefined)
            for (let n = 0; n < 30; n++) yield* enqueue(Pool, { account: `acct-${n % 10}`, n })
            for (let round = 0; round < 60 && (yield* Ref.get(p.runs)).length < 30; round++) {
              yield* Effect.all(
                Array.from({ length: 30 }, (_, i) => processNext({ host: `host-${i}` })),
                { concurrency: "unbounded" }
              )
              yield* TestClock.adjust(31 * SECOND)
            }
            expect((yield* Ref.get(p.runs)).map((r) => r.n).sort((a, b) => a - b)).toEqual(
              Array.from({ length: 30 }, (_, n) => n)
            )
            expect(yield* p.most).toBeLessThanOrEqual(4)
            expect(yield* Ref.get(worstKey)).toBeLessThanOrEqual(3)
          })
        )
      }))

    it.effect("the slot is released after a failure and by a stopping worker's hand-back, and left to expire after a timeout", () =>
      Effect.gen(function*() {
        const p = yield* probe
        const gate2 = yield* Deferred.make<void>()
        // n 1 fails, n 2 waits for gate2, n 3 never ends
        const Flaky = define({
          name: "CapFlaky",
          schema: Account,
          typeConcurrencyLimit: 1,
          maxRetries: 2,
          timeout: "5 seconds",
          perform: (payload) =>
            payload.n === 3 ? Effect.never : payload.n === 2 ? Deferred.await(gate2) : p.perform(payload)
        })
        yield* withJobs(
          [Flaky],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const store = yield* JobStore
            // a failure releases it
            yield* enqueue(Flaky, { account: "-", n: 1, fail: true })
            const failing = yield* Effect.fork(processNext({ host: "h1" }))
            yield* eventually(Effect.map(Ref.get(p.running), (r) => r === 1))
            expect(Option.isSome(yield* leaseRow("cap:CapFlaky"))).toBe(true)
            yield* Deferred.succeed(p.gate, undefined)
            expect(yield* Fiber.join(failing)).toMatchObject({ _tag: "Failed" })
            expect(Option.isNone(yield* leaseRow("cap:CapFlaky"))).toBe(true)
            yield* TestClock.adjust(3600 * SECOND)
            expect(yield* processNext({ host: "h1" })).toMatchObject({ _tag: "Failed" })
            yield* TestClock.adjust(3600 * SECOND)
            expect(yield* processNext({ host: "h1" })).toMatchObject({ _tag: "Failed" })
            // a stopping worker's hand-back releases it with the attempt's other leases
            const { id } = yield* enqueue(Flaky, { account: "-", n: 2 })
            const running = yield* Effect.fork(processNext({ host: "h2" }))
            yield* eventually(Effect.map(leaseRow("cap:CapFlaky"), Option.isSome))
            const slot = Option.getOrThrow(yield* leaseRow("cap:CapFlaky"))
            expect(slot.owner).toBe((yield* row(id)).claimToken)
            yield* store.handBack([{ id, token: slot.owner }], T0 + 7200 * SECOND)
            expect(Option.isNone(yield* leaseRow("cap:CapFlaky"))).toBe(true)
            yield* Deferred.succeed(gate2, undefined)
            expect(yield* Fiber.join(running)).toMatchObject({ _tag: "Fenced" })
            expect(yield* processNext({ host: "h2" })).toMatchObject({ _tag: "Completed", job: { id } })
            // a timed-out run may still be running: its slot is left to expire
            const { id: stuck } = yield* enqueue(Flaky, { account: "-", n: 3 })
            const timing = yield* Effect.fork(processNext({ host: "h3" }))
            yield* eventually(Effect.map(leaseRow("cap:CapFlaky"), Option.isSome))
            yield* TestClock.adjust(5 * SECOND)
            expect(yield* Fiber.join(timing)).toMatchObject({ _tag: "Failed", job: { id: stuck } })
            const left = Option.getOrThrow(yield* leaseRow("cap:CapFlaky"))
            expect(left.owner).not.toBe(slot.owner)
            expect(left.expiresAt).toBeGreaterThan(T0 + 7200 * SECOND + 5 * SECOND)
          })
        )
      }))

    it.effect("a slot taken over while its run went on (a skewed clock) is reported lost at the release", () =>
      Effect.gen(function*() {
        const p = yield* probe
        const Lost = define({ name: "CapLost", schema: Account, typeConcurrencyLimit: 1, perform: p.perform })
        yield* withJobs(
          [Lost],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            yield* enqueue(Lost, { account: "-", n: 1 })
            const running = yield* Effect.fork(processNext({ host: "h1" }))
            yield* eventually(Effect.map(Ref.get(p.running), (r) => r === 1))
            // another host whose clock is a window ahead sees the slot expired and takes it
            const late = T0 + leaseWindowSeconds(300) * SECOND + 1
            const leases = yield* JobLeases
            expect(Option.isSome(
              yield* leases.tryAcquireToken({
                name: "cap:CapLost",
                owner: "intruder",
                now: late,
                expiresAt: late + 1000
              })
            )).toBe(true)
            yield* Deferred.succeed(p.gate, undefined)
            expect(yield* Fiber.join(running)).toMatchObject({ _tag: "Completed", leaseLost: true })
            expect(Option.map(yield* leaseRow("cap:CapLost"), (r) => r.owner)).toEqual(Option.some("intruder"))
          })
        )
      }))

    it.effect("a pause between taking the key's lease and perform (here during the cap's take) never starts perform on a lease taken over meanwhile", () =>
      Effect.gen(function*() {
        const p = yield* probe
        const Paused = define({
          name: "CapPaused",
          schema: Account,
          concurrencyKeyFor: ({ account }) => account,
          typeConcurrencyLimit: 2,
          timeout: "5 seconds",
          perform: p.perform
        })
        yield* withJobs(
          [Paused],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            yield* Deferred.succeed(p.gate, undefined)
            const leases = yield* JobLeases
            const window = leaseWindowSeconds(5) * SECOND
            let paused = false
            // The cap's reply comes after a pause longer than the key's lease window, during which
            // another host took the key's expired lease.
            const pausing = {
              ...leases,
              tryAcquireToken: (input: Parameters<typeof leases.tryAcquireToken>[0]) =>
                input.name.startsWith("cap:") && !paused
                  ? Effect.tap(leases.tryAcquireToken(input), () =>
                    Effect.gen(function*() {
                      paused = true
                      yield* TestClock.adjust(window + 1)
                      const now = T0 + window + 1
                      yield* leases.tryAcquireToken({
                        name: "key:acct",
                        owner: "other-host",
                        now,
                        expiresAt: now + window
                      })
                    }))
                  : leases.tryAcquireToken(input)
            }
            const { id } = yield* enqueue(Paused, { account: "acct", n: 1 })
            const result = yield* Effect.provideService(processNext({ host: "h1" }), JobLeases, pausing)
            expect(result).toMatchObject({ _tag: "Deferred", job: { id }, leaseName: "key:acct" })
            expect(yield* Ref.get(p.runs)).toEqual([])
            expect(Option.map(yield* leaseRow("key:acct"), (r) => r.owner)).toEqual(Option.some("other-host"))
            expect(Option.isNone(yield* leaseRow("cap:CapPaused"))).toBe(true)
            expect(yield* row(id)).toMatchObject({ status: "pending", attempts: 0 })
          })
        )
      }))

    it("typeConcurrencyLimit: a whole number from 1 to 1000", () => {
      const base = { name: "C", schema: Schema.Struct({}), perform: () => Effect.void }
      for (const typeConcurrencyLimit of [0, -1, 1.5, 1001, Number.NaN]) {
        expect(() => define({ ...base, typeConcurrencyLimit })).toThrow(/typeConcurrencyLimit/)
      }
      expect(define({ ...base, typeConcurrencyLimit: 40 }).typeConcurrencyLimit).toBe(40)
      expect(define(base).typeConcurrencyLimit).toBeUndefined()
      expect(capLeaseName("SyncAccount")).toBe("cap:SyncAccount")
      expect(leaseWindowSeconds(5)).toBe(65)
    })
  })
