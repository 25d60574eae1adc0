/**
 * Limits changed live (docs/flow-control.md, docs/behaviour.md §19) on every adapter: a key's,
 * a type's or a queue's row overrides the declared limits or pauses them, seen by attempts that
 * start once the rows are read again (at most a second later, on the Clock); a paused job waits
 * pending with its attempt given back and wakes when the pause is lifted; a limit lowered below
 * what runs lets the running finish and starts nothing until under; bad changes fail with
 * `LimitInputError` and change nothing. TestClock drives time.
 */
import { expect, layer } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber, Option, Ref, Schema, TestClock } from "effect"
import { JobStore } from "../../src/JobStore.ts"
import { LimitInputError } from "../../src/core/errors.ts"
import { PAUSED_RECHECK_MS } from "../../src/core/limits.ts"
import { define, enqueue } from "../../src/runtime/Job.ts"
import * as Limits from "../../src/runtime/limits.ts"
import { LIMITS_FRESH_MS } from "../../src/runtime/worker/liveLimits.ts"
import { processNext } from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor } from "../support/databases.ts"
import { eventually, withJobs } from "../support/jobs.ts"

const T0 = 1_791_039_632_175

const Keyed = Schema.Struct({ key: Schema.String, n: Schema.Number })

const row = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.getOrThrow))

/** Performs that wait for their own gate (by n), counting how many run at once. */
const gates = Effect.gen(function*() {
  const open = new Map<number, Deferred.Deferred<void>>()
  const running = yield* Ref.make(0)
  const most = yield* Ref.make(0)
  const gateOf = (n: number) =>
    Effect.gen(function*() {
      let gate = open.get(n)
      if (gate === undefined) open.set(n, gate = yield* Deferred.make<void>())
      return gate
    })
  const perform = ({ n }: { readonly n: number }) =>
    Effect.gen(function*() {
      const gate = yield* gateOf(n)
      const now = yield* Ref.updateAndGet(running, (x) => x + 1)
      yield* Ref.update(most, (m) => Math.max(m, now))
      yield* Deferred.await(gate)
      yield* Ref.update(running, (x) => x - 1)
    })
  const release = (n: number) => Effect.flatMap(gateOf(n), (g) => Deferred.succeed(g, undefined))
  return { most, perform, release, running }
})

/** Past the rows' freshness, so the next attempt reads the limits again. */
const seen = TestClock.adjust(LIMITS_FRESH_MS)

export const limitsConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "lim"), { timeout: 120_000 })(`Limits changed live on ${adapter}`, (it) => {
    it.effect("a key's row raises its concurrency from 1 to 2; cleared, the declaration applies again", () =>
      Effect.gen(function*() {
        const g = yield* gates
        const Sync = define({ name: "LiveSync", schema: Keyed, concurrencyKeyFor: (p) => p.key, perform: g.perform })
        yield* withJobs(
          [Sync],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            expect(yield* Limits.set({ key: "acct", concurrency: 2 })).toMatchObject({
              scope: "key",
              target: "acct",
              concurrency: 2,
              paused: false
            })
            for (const n of [1, 2, 3]) yield* enqueue(Sync, { key: "acct", n })
            const fibers = yield* Effect.forEach([1, 2, 3], (h) => Effect.fork(processNext({ host: `h${h}` })))
            yield* eventually(Effect.map(
              Effect.forEach(fibers, (f) => f.poll),
              (polls) => polls.filter(Option.isSome).length === 1
            ))
            expect(yield* Ref.get(g.running)).toBe(2)
            for (const n of [1, 2, 3]) yield* g.release(n)
            yield* Effect.forEach(fibers, Fiber.join)
            // cleared: one at a time again
            expect(yield* Limits.clear({ key: "acct" })).toBe(true)
            expect(yield* Limits.clear({ key: "acct" })).toBe(false)
            yield* seen
            yield* Ref.set(g.most, 0)
            for (const n of [4, 5]) yield* enqueue(Sync, { key: "acct", n })
            const more = yield* Effect.forEach([1, 2], (h) => Effect.fork(processNext({ host: `h${h}` })))
            yield* eventually(Effect.map(
              Effect.forEach(more, (f) => f.poll),
              (polls) => polls.filter(Option.isSome).length >= 1
            ))
            for (const n of [3, 4, 5]) yield* g.release(n)
            yield* Effect.forEach(more, Fiber.join)
            expect(yield* Ref.get(g.most)).toBe(1)
          })
        )
      }))

    it.effect("a paused type holds its jobs pending, attempts given back, and shows who paused it; resumed, they are due at once", () =>
      Effect.gen(function*() {
        const g = yield* gates
        const Mail = define({ name: "LiveMail", schema: Keyed, perform: g.perform })
        yield* withJobs(
          [Mail],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            yield* g.release(1)
            yield* g.release(2)
            const paused = yield* Limits.pause({ type: "LiveMail" }, "ops@example.com")
            expect(paused).toMatchObject({ paused: true, pausedBy: "ops@example.com", pausedAt: T0 })
            const { id } = yield* enqueue(Mail, { key: "-", n: 1 })
            const result = yield* processNext({ host: "h1" })
            expect(result).toMatchObject({
              _tag: "Deferred",
              leaseName: "paused:type:LiveMail",
              holder: "ops@example.com"
            })
            expect(yield* row(id)).toMatchObject({
              status: "pending",
              attempts: 0,
              leaseName: "paused:type:LiveMail",
              runAt: T0 + PAUSED_RECHECK_MS
            })
            // a queue's pause holds it too, whatever its type's row says
            yield* Limits.pause({ queue: "default" })
            yield* Limits.resume({ type: "LiveMail" })
            expect(yield* row(id)).toMatchObject({ status: "pending", leaseName: null })
            expect((yield* row(id)).runAt).toBeLessThanOrEqual(T0)
            yield* seen
            expect(yield* processNext({ host: "h1" })).toMatchObject({
              _tag: "Deferred",
              leaseName: "paused:queue:default"
            })
            expect(yield* Limits.clear({ queue: "default" })).toBe(true)
            yield* seen
            expect(yield* processNext({ host: "h1" })).toMatchObject({ _tag: "Completed", job: { id } })
            expect((yield* Limits.list).map((r) => [r.scope, r.target, r.paused])).toEqual([
              ["type", "LiveMail", false]
            ])
          })
        )
      }))

    it.effect("a limit lowered from 3 to 1 while 3 run: nothing starts until all 3 have finished, then one at a time", () =>
      Effect.gen(function*() {
        const g = yield* gates
        const Pool = define({
          name: "LivePool",
          schema: Keyed,
          concurrencyKeyFor: (p) => p.key,
          concurrencyLimit: 3,
          perform: g.perform
        })
        yield* withJobs(
          [Pool],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            // a millisecond apart, so every database claims them in this order
            for (const n of [1, 2, 3, 4]) {
              yield* enqueue(Pool, { key: "p", n })
              yield* TestClock.adjust(1)
            }
            // one after another, each running before the next is claimed
            const first: Array<Fiber.RuntimeFiber<unknown, unknown>> = []
            for (const h of [1, 2, 3]) {
              first.push(yield* Effect.fork(processNext({ host: `h${h}` })))
              yield* eventually(Effect.map(Ref.get(g.running), (r) => r === h))
            }
            yield* Limits.set({ type: "LivePool", concurrency: 1 })
            yield* seen
            // slot 1 frees, slots 2 and 3 still run: the fourth waits
            yield* g.release(1)
            yield* g.release(2)
            yield* eventually(Effect.map(Ref.get(g.running), (r) => r === 1))
            expect(yield* processNext({ host: "h4" })).toMatchObject({ _tag: "Deferred", leaseName: "key:p" })
            yield* g.release(3)
            yield* Effect.forEach(first, Fiber.join)
            yield* TestClock.adjust(30_000)
            yield* g.release(4)
            expect(yield* processNext({ host: "h4" })).toMatchObject({ _tag: "Completed" })
            expect(yield* Ref.get(g.most)).toBe(3)
          })
        )
      }))

    it.effect("a type's row adds a cap and a rate limit its declaration does not have", () =>
      Effect.gen(function*() {
        const g = yield* gates
        const Api = define({ name: "LiveApi", schema: Keyed, perform: g.perform })
        yield* withJobs(
          [Api],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            yield* Limits.set({ type: "LiveApi", typeCap: 1 })
            for (const n of [1, 2]) yield* enqueue(Api, { key: "-", n })
            const running = yield* Effect.fork(processNext({ host: "h1" }))
            yield* eventually(Effect.map(Ref.get(g.running), (r) => r === 1))
            expect(yield* processNext({ host: "h2" })).toMatchObject({ _tag: "Deferred", leaseName: "cap:LiveApi" })
            yield* g.release(1)
            yield* g.release(2)
            yield* Fiber.join(running)
            // the cap removed, a rate limit of one a minute instead
            yield* Limits.set({ type: "LiveApi", typeCap: null, rate: { limit: 1, period: "1 minute" } })
            yield* seen
            yield* TestClock.adjust(30_000)
            expect(yield* processNext({ host: "h2" })).toMatchObject({ _tag: "Completed" })
            yield* enqueue(Api, { key: "-", n: 3 })
            expect(yield* processNext({ host: "h2" })).toMatchObject({
              _tag: "Deferred",
              leaseName: "rate:job:LiveApi"
            })
          })
        )
      }))

    it.effect("a bad change fails with LimitInputError and changes nothing", () =>
      withJobs(
        [],
        Effect.gen(function*() {
          const bad: ReadonlyArray<Limits.LimitSettings> = [
            {} as Limits.LimitSettings,
            { type: "A", key: "b" } as unknown as Limits.LimitSettings,
            { type: " " },
            { type: "A", concurrency: 0 },
            { type: "A", concurrency: 1.5 },
            { key: "k", typeCap: 3 },
            { queue: "q", concurrency: 2 },
            { type: "A", rate: { limit: 0, period: "1 second" } },
            { type: "A", rate: { limit: 5, period: "soon" as never } },
            { key: "a\u0000b", paused: true },
            { type: "x".repeat(256), paused: true },
            { type: "'; DROP TABLE jobs; --", concurrency: 1001 }
          ]
          for (const settings of bad) {
            const result = yield* Effect.either(Limits.set(settings))
            expect(Either.isLeft(result) && result.left instanceof LimitInputError).toBe(true)
          }
          expect(Either.isLeft(yield* Effect.either(Limits.clear({} as Limits.LimitTarget)))).toBe(true)
          expect(yield* Limits.list).toEqual([])
          // quotes and SQL in a target are only text
          const odd = "'; DROP TABLE jobs; --"
          expect(yield* Limits.set({ key: odd, concurrency: 2 })).toMatchObject({ target: odd, concurrency: 2 })
          expect((yield* Limits.list).map((r) => r.target)).toEqual([odd])
        })
      ))
  })
