/**
 * Rate limits (docs/flow-control.md) on every adapter: at most N attempts start in any window of
 * the period, per key or per type, a burst of N after a quiet period, a job over the limit
 * deferred to the moment its slot frees with its attempt given back (never a retry used up) and
 * its key's lease given back, slots another process took respected, and slots never freed early
 * by a stopping worker's hand-back. TestClock drives time.
 */
import { expect, layer } from "@effect/vitest"
import { Clock, type Duration, Effect, Exit, Option, Ref, Schema, Scope, TestClock } from "effect"
import { JobLeases, JobStore } from "../../src/JobStore.ts"
import { RATE_START_ALLOWANCE_MS, rateLeaseName, rateSlotNames } from "../../src/core/rate.ts"
import { Metrics } from "../../src/index.ts"
import { define, enqueue } from "../../src/runtime/Job.ts"
import { processNext } from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor } from "../support/databases.ts"
import { eventually, settle, withJobs } from "../support/jobs.ts"
import { startWorker } from "./worker.ts"

const T0 = 1_791_039_632_175
const SECOND = 1000
/** A slot taken at t may be taken again from this long after t. */
const cycle = (periodMs: number) => periodMs + RATE_START_ALLOWANCE_MS + 1

const Keyed = Schema.Struct({ key: Schema.String, n: Schema.Number })

const row = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.getOrThrow))

/** The most starts in any window [t, t + period) of `starts`. */
const mostInWindow = (starts: ReadonlyArray<number>, periodMs: number): number => {
  const sorted = [...starts].sort((a, b) => a - b)
  let most = 0
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= periodMs) j++
    most = Math.max(most, i - j + 1)
  }
  return most
}

/** A job type limited to `limit` starts per `periodMs`, recording each perform's start time. */
const limited = (
  name: string,
  starts: Ref.Ref<ReadonlyArray<{ readonly key: string; readonly n: number; readonly at: number }>>,
  options: { readonly limit: number; readonly periodMs: number; readonly keyed?: boolean; readonly exclusive?: boolean }
) =>
  define({
    name,
    schema: Keyed,
    maxRetries: 1,
    rateLimit: { limit: options.limit, period: options.periodMs },
    ...(options.keyed === true ? { concurrencyKeyFor: (p: typeof Keyed.Type) => p.key } : {}),
    perform: ({ key, n }) =>
      Effect.flatMap(Clock.currentTimeMillis, (at) => Ref.update(starts, (s) => [...s, { key, n, at }]))
  })

export const rateLimitConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "rl"), { timeout: 120_000 })(`Rate limits on ${adapter}`, (it) => {
    it.effect("2 per 10 s on a type: a burst of 2, the rest deferred to when a slot frees, attempts given back, never 3 in a window", () =>
      Effect.gen(function*() {
        const starts = yield* Ref.make<ReadonlyArray<{ key: string; n: number; at: number }>>([])
        const Sms = limited("Sms", starts, { limit: 2, periodMs: 10 * SECOND })
        yield* withJobs(
          [Sms],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const ids: Array<string> = []
            for (let n = 0; n < 5; n++) ids.push((yield* enqueue(Sms, { key: "-", n })).id)
            const first = yield* Effect.forEach(ids, () => processNext({ host: "h1" }))
            expect(first.map((r) => r._tag)).toEqual(["Completed", "Completed", "Deferred", "Deferred", "Deferred"])
            const name = rateLeaseName("Sms", undefined)
            expect(name).toBe("rate:job:Sms")
            // each deferred job booked into the slot that frees first: two at the first cycle, one at the second
            expect(first.slice(2).map((r) => r._tag === "Deferred" ? [r.leaseName, r.retryAt - T0] : r)).toEqual([
              [name, cycle(10 * SECOND)],
              [name, cycle(10 * SECOND)],
              [name, 2 * cycle(10 * SECOND)]
            ])
            for (const r of first.slice(2)) {
              expect(yield* row(r._tag === "Deferred" ? r.job.id : "-")).toMatchObject({
                status: "pending",
                attempts: 0,
                leaseName: name
              })
            }
            // nothing is due before the first slot frees
            yield* TestClock.adjust(cycle(10 * SECOND) - 1)
            expect(yield* processNext({ host: "h2" })).toMatchObject({ _tag: "Idle" })
            yield* TestClock.adjust(1)
            const second = yield* Effect.forEach([1, 2, 3], () => processNext({ host: "h2" }))
            expect(second.map((r) => r._tag)).toEqual(["Completed", "Completed", "Idle"])
            yield* TestClock.adjust(cycle(10 * SECOND))
            expect(yield* processNext({ host: "h1" })).toMatchObject({ _tag: "Completed" })
            const all = yield* Ref.get(starts)
            expect(all.map((s) => s.n).sort()).toEqual([0, 1, 2, 3, 4])
            expect(mostInWindow(all.map((s) => s.at), 10 * SECOND)).toBe(2)
            for (const id of ids) expect(yield* row(id)).toMatchObject({ status: "completed", attempts: 1 })
            // seen in the metrics: three deferrals by the rate limit, how long each waited, the slot in use
            const text = yield* Metrics.render
            expect(text).toContain(`leasehold_rate_limited_total{job="Sms",queue="default"} 3`)
            expect(text).toContain(`leasehold_limit_waits_seconds_count{job="Sms",queue="default",limit="rate"} 3`)
            expect(text).toContain(
              `leasehold_limit_waits_seconds_sum{job="Sms",queue="default",limit="rate"} ${
                (cycle(10 * SECOND) * 2 + 2 * cycle(10 * SECOND)) / 1000
              }`
            )
            expect(text).toContain(`leasehold_limit_slots_in_use{limit="rate",name="rate:job:Sms"} 1`)
          })
        )
      }))

    it.effect("per key: each key has its own N; a key over its limit gives its lease back and waits, others run", () =>
      Effect.gen(function*() {
        const starts = yield* Ref.make<ReadonlyArray<{ key: string; n: number; at: number }>>([])
        const Sync = limited("SyncRated", starts, { limit: 1, periodMs: 60 * SECOND, keyed: true })
        yield* withJobs(
          [Sync],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            // a millisecond apart, so every database claims them in this order
            yield* enqueue(Sync, { key: "a", n: 1 })
            yield* TestClock.adjust(1)
            const { id: a2 } = yield* enqueue(Sync, { key: "a", n: 2 })
            yield* TestClock.adjust(1)
            yield* enqueue(Sync, { key: "b", n: 3 })
            const results = yield* Effect.forEach([1, 2, 3], () => processNext({ host: "h1" }))
            expect(results.map((r) => r._tag)).toEqual(["Completed", "Deferred", "Completed"])
            expect(results[1]).toMatchObject({ leaseName: "rate:key:a", retryAt: T0 + 2 + cycle(60 * SECOND) })
            // the key's own lease was given back: free for another key's job or another process
            const leases = yield* JobLeases
            expect(Option.isNone(yield* leases.read("key:a"))).toBe(true)
            expect(yield* row(a2)).toMatchObject({ status: "pending", attempts: 0 })
            yield* TestClock.adjust(cycle(60 * SECOND))
            expect(yield* processNext({ host: "h1" })).toMatchObject({ _tag: "Completed", job: { id: a2 } })
            const all = yield* Ref.get(starts)
            expect(all.filter((s) => s.key === "a").map((s) => s.at - T0)).toEqual([2, 2 + cycle(60 * SECOND)])
          })
        )
      }))

    it.effect("slots another process took are respected: a start the book thought free is refused by the database and the job waits for the real holder", () =>
      Effect.gen(function*() {
        const starts = yield* Ref.make<ReadonlyArray<{ key: string; n: number; at: number }>>([])
        const Mail = limited("MailRated", starts, { limit: 2, periodMs: 10 * SECOND })
        yield* withJobs(
          [Mail],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const leases = yield* JobLeases
            const names = rateSlotNames(rateLeaseName("MailRated", undefined), 2)
            expect(names).toEqual(["rate:job:MailRated", "rate:job:MailRated#2"])
            yield* enqueue(Mail, { key: "-", n: 1 })
            expect(yield* processNext({ host: "h1" })).toMatchObject({ _tag: "Completed" })
            // another process takes the second slot 3 s later, after this one's book was made
            yield* TestClock.adjust(3 * SECOND)
            const other = yield* leases.tryAcquireToken({
              name: names[1]!,
              owner: "rate:another-process",
              now: T0 + 3 * SECOND,
              expiresAt: T0 + 3 * SECOND + 10 * SECOND
            })
            expect(Option.isSome(other)).toBe(true)
            const { id } = yield* enqueue(Mail, { key: "-", n: 2 })
            const deferred = yield* processNext({ host: "h1" })
            // deferred to the first slot to free (this process's own, at T0 + one cycle), not run
            expect(deferred).toMatchObject({ _tag: "Deferred", retryAt: T0 + cycle(10 * SECOND) })
            expect((yield* Ref.get(starts)).map((s) => s.n)).toEqual([1])
            yield* TestClock.setTime(T0 + cycle(10 * SECOND))
            expect(yield* processNext({ host: "h1" })).toMatchObject({ _tag: "Completed", job: { id } })
          })
        )
      }))

    it.effect("a stopping worker's hand-back releases its attempts' leases but never their rate slots", () =>
      Effect.gen(function*() {
        const starts = yield* Ref.make<ReadonlyArray<{ key: string; n: number; at: number }>>([])
        const Push = limited("PushRated", starts, { limit: 1, periodMs: 30 * SECOND, keyed: true })
        yield* withJobs(
          [Push],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { id } = yield* enqueue(Push, { key: "p", n: 1 })
            expect(yield* processNext({ host: "h1" })).toMatchObject({ _tag: "Completed" })
            const leases = yield* JobLeases
            const slot = Option.getOrThrow(yield* leases.read("rate:key:p"))
            expect(slot.owner.startsWith("rate:")).toBe(true)
            // the hand-back of every lease owned by the attempt's claim token leaves the slot held
            const store = yield* JobStore
            const token = slot.owner.slice("rate:".length)
            yield* store.handBack([{ id, token }], T0 + SECOND)
            expect(yield* leases.read("rate:key:p")).toEqual(Option.some(slot))
            yield* enqueue(Push, { key: "p", n: 2 })
            expect(yield* processNext({ host: "h2" })).toMatchObject({ _tag: "Deferred" })
          })
        )
      }))

    it.effect("60 jobs, limit 5 per second, 3 workers taking turns as the clock moves 100 ms at a time: never 6 starts in a window, all run", () =>
      Effect.gen(function*() {
        const starts = yield* Ref.make<ReadonlyArray<{ key: string; n: number; at: number }>>([])
        const Api = limited("ApiRated", starts, { limit: 5, periodMs: SECOND })
        yield* withJobs(
          [Api],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            for (let n = 0; n < 60; n++) yield* enqueue(Api, { key: "-", n })
            for (let step = 0; step < 200 && (yield* Ref.get(starts)).length < 60; step++) {
              yield* Effect.all(
                [1, 2, 3].map((h) => processNext({ host: `h${h}` })),
                { concurrency: "unbounded" }
              )
              yield* TestClock.adjust(100)
            }
            const all = yield* Ref.get(starts)
            expect(all.map((s) => s.n).sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, n) => n))
            expect(mostInWindow(all.map((s) => s.at), SECOND)).toBe(5)
            // the limit is used, not wasted: 60 jobs in about 12 periods
            const last = Math.max(...all.map((s) => s.at))
            expect(last - T0).toBeLessThan(14 * SECOND)
          })
        )
      }))

    it.effect("a long-running worker with an hour's poll starts each deferred job when its slot frees: it rings itself", () =>
      Effect.gen(function*() {
        const starts = yield* Ref.make<ReadonlyArray<{ key: string; n: number; at: number }>>([])
        const Hook = limited("HookRated", starts, { limit: 2, periodMs: 5 * SECOND })
        yield* withJobs(
          [Hook],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { scope } = yield* startWorker({ host: "alarm", concurrency: 2, pollInterval: "1 hour" })
            yield* settle
            for (let n = 0; n < 5; n++) yield* enqueue(Hook, { key: "-", n })
            yield* eventually(Effect.map(Ref.get(starts), (s) => s.length === 2))
            // the three others wait for the slots; moving the clock to each slot's end starts them
            yield* settle
            expect((yield* Ref.get(starts)).length).toBe(2)
            yield* TestClock.adjust(cycle(5 * SECOND))
            yield* eventually(Effect.map(Ref.get(starts), (s) => s.length === 4))
            yield* TestClock.adjust(cycle(5 * SECOND))
            yield* eventually(Effect.map(Ref.get(starts), (s) => s.length === 5))
            expect(mostInWindow((yield* Ref.get(starts)).map((s) => s.at), 5 * SECOND)).toBe(2)
            yield* Scope.close(scope, Exit.void)
          })
        )
      }))

    it.effect("a slot whose replies come late is counted from perform's start: two starts of a limit of 1 are a period apart", () =>
      Effect.gen(function*() {
        const starts = yield* Ref.make<ReadonlyArray<{ key: string; n: number; at: number }>>([])
        const Call = limited("LateRated", starts, { limit: 1, periodMs: SECOND })
        yield* withJobs(
          [Call],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            // The first take's reply 50 ms late and the first move's 300 ms late (a loaded
            // database): each is past the start allowance, so the slot is moved again.
            let late = [50, 300]
            const slow = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
              Effect.tap(effect, () => {
                const ms = late[0]
                late = late.slice(1)
                return ms === undefined ? Effect.void : TestClock.adjust(ms)
              })
            const leases = yield* JobLeases
            const slowLeases = {
              ...leases,
              tryAcquireToken: (input: Parameters<typeof leases.tryAcquireToken>[0]) =>
                input.name.startsWith("rate:") ? slow(leases.tryAcquireToken(input)) : leases.tryAcquireToken(input),
              renew: (input: Parameters<typeof leases.renew>[0]) =>
                input.name.startsWith("rate:") ? slow(leases.renew(input)) : leases.renew(input)
            }
            yield* Effect.provideService(
              Effect.gen(function*() {
                yield* enqueue(Call, { key: "-", n: 1 })
                expect(yield* processNext({ host: "h1" })).toMatchObject({ _tag: "Completed" })
                yield* enqueue(Call, { key: "-", n: 2 })
                const deferred = yield* processNext({ host: "h2" })
                // deferred to when the slot frees, counted from its last move
                expect(deferred).toMatchObject({
                  _tag: "Deferred",
                  retryAt: T0 + 350 + SECOND + RATE_START_ALLOWANCE_MS + 1
                })
                if (deferred._tag === "Deferred") yield* TestClock.setTime(deferred.retryAt)
                expect(yield* processNext({ host: "h2" })).toMatchObject({ _tag: "Completed" })
              }),
              JobLeases,
              slowLeases
            )
            const [a, b] = (yield* Ref.get(starts)).map((s) => s.at)
            expect(a! - T0).toBe(350)
            expect(b! - a!).toBeGreaterThanOrEqual(SECOND)
          })
        )
      }))

    it("rateLimit: a whole number from 1 to 1000 per a period from 1 ms to a day", () => {
      const base = { name: "R", schema: Schema.Struct({}), perform: () => Effect.void }
      for (const limit of [0, -1, 1.5, 1001, Number.NaN]) {
        expect(() => define({ ...base, rateLimit: { limit, period: "1 second" } })).toThrow(/rateLimit.limit/)
      }
      for (const period of [0, -5, "2 days", "soon", 0.5]) {
        expect(() => define({ ...base, rateLimit: { limit: 5, period: period as Duration.DurationInput } })).toThrow(
          /rateLimit.period/
        )
      }
      expect(define({ ...base, rateLimit: { limit: 100, period: "1 minute" } }).rateLimit).toEqual({
        limit: 100,
        periodMs: 60_000
      })
      expect(define(base).rateLimit).toBeUndefined()
    })
  })
