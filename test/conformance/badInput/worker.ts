/**
 * Bad-input catalogue, workers (issue 6): the long-running worker carries on past rows it
 * cannot run, and the edge values of the worker's options (timeout caps, counts, time budgets,
 * drain expiries, host caps, hosts ending in whitespace other than a space) are stored or
 * honoured exactly. The refusals of bad options, which happen before any store call, run once
 * in test/unit/workerOptions.test.ts.
 */
import { expect } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Layer, Option, Scope, TestClock } from "effect"
import { JobLeases, JobStore } from "../../../src/JobStore.ts"
import { MAX_TIMEOUT_SECONDS } from "../../../src/core/jobs.ts"
import { MAX_INT32 } from "../../../src/core/input.ts"
import { define, enqueue } from "../../../src/runtime/Job.ts"
import * as Worker from "../../../src/runtime/Worker.ts"
import { eventually, withJobs } from "../../support/jobs.ts"
import { type BadInputArea, insertRow, makeProbe, row, Text } from "./helpers.ts"
import { SECOND, T0 } from "./inputs.ts"

/** The worker area of the catalogue. */
export const workerArea: BadInputArea = (it) => {
  it.effect("a long-running worker records undecodable and unknown rows as failures and keeps running", () =>
    Effect.gen(function*() {
      const p = yield* makeProbe
      const Known = define({ name: "known", schema: Text, perform: p.perform })
      yield* withJobs(
        [Known],
        Effect.gen(function*() {
          yield* p.bind
          yield* TestClock.setTime(T0)
          const unknown = yield* insertRow({ name: "unknown; --", payload: `{"s":"x"}`, priority: 2 })
          const garbled = yield* insertRow({ name: "known", payload: "{not json", priority: 1 })
          for (const s of ["a", "b", "c"]) yield* enqueue(Known, { s })
          const scope = yield* Scope.make()
          const context = yield* Layer.buildWithScope(
            Worker.layer({ host: "lw", concurrency: 1, pollInterval: "20 millis" }),
            scope
          )
          const worker = Context.get(context, Worker.WorkerHandle)
          const settled = (n: number) =>
            eventually(
              Effect.zipRight(
                TestClock.adjust("20 millis"),
                Effect.map(worker.stats, (s) => s.processed + s.failed >= n)
              )
            )
          yield* settled(5)
          const stats = yield* worker.stats
          expect(stats).toMatchObject({ processed: 3, failed: 2 })
          // Both recorded; their order is the claim order's business (its own conformance tests),
          // and this one once saw them reversed on MySQL under load.
          expect(stats.errors).toHaveLength(2)
          expect(stats.errors).toEqual(expect.arrayContaining([
            expect.stringContaining("UnknownJobTypeError"),
            expect.stringContaining("stored payload no longer decodes")
          ]))
          // still running: a job enqueued now is picked up
          yield* enqueue(Known, { s: "late" })
          yield* worker.wake
          yield* settled(6)
          yield* Scope.close(scope, Exit.void)
          expect(yield* worker.stats).toMatchObject({ processed: 4, failed: 2 })
          // a, b and c are due at the same time, so in any order; late comes last
          const ran = (yield* p.all).map((s) => (s.payload as { readonly s: string }).s)
          expect([...ran.slice(0, 3)].sort()).toEqual(["a", "b", "c"])
          expect(ran[3]).toBe("late")
          expect(yield* row(unknown)).toMatchObject({ status: "failed", attempts: 1 })
          expect(yield* row(garbled)).toMatchObject({ status: "failed", attempts: 1 })
        })
      )
    }))

  it.effect("worker options: a huge timeout cap is clamped to the longest timeout, a sub-second one to a second", () => {
    const Plain = define({ name: "plain", schema: Text, perform: () => Effect.void })
    const Longest = define({
      name: "longest",
      schema: Text,
      timeout: `${MAX_TIMEOUT_SECONDS} seconds`,
      perform: () => Effect.void
    })
    return withJobs(
      [Plain, Longest],
      Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        const { id } = yield* enqueue(Plain, { s: "x" })
        for (const cap of [1e308, 2 ** 53]) {
          const longest = yield* enqueue(Longest, { s: String(cap) }, { priority: 1 })
          expect(yield* Worker.processNext({ host: "h", timeoutCap: cap }), String(cap)).toMatchObject({
            _tag: "Completed",
            job: { id: longest.id }
          })
          expect((yield* row(longest.id)).claimTimeout, String(cap)).toBe(MAX_TIMEOUT_SECONDS)
        }
        expect(yield* Worker.processNext({ host: "h", timeoutCap: 0.5, hostCap: MAX_INT32 })).toMatchObject({
          _tag: "Completed",
          job: { id }
        })
        expect((yield* row(id)).claimTimeout).toBe(1)
      })
    )
  })

  it.effect("processQueue limit and tick maxJobs: whole numbers run exactly that many; limit 0 means no limit, maxJobs 0 runs none", () => {
    const Plain = define({ name: "plain", schema: Text, perform: () => Effect.void })
    return withJobs(
      [Plain],
      Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        for (let i = 0; i < 5; i++) yield* enqueue(Plain, { s: String(i) })
        expect(yield* Worker.processQueue({ host: "h", limit: 1 })).toMatchObject({ processed: 1 })
        expect(yield* Worker.tick({ host: "h", maxJobs: 0 })).toMatchObject({ processed: 0 })
        expect(yield* Worker.tick({ host: "h", maxJobs: 2 })).toMatchObject({ processed: 2 })
        expect(yield* Worker.processQueue({ host: "h", limit: 0 })).toMatchObject({ processed: 2 })
      })
    )
  })

  it.effect("processQueue timeout: 0 starts nothing, a finite one runs, an infinite one is no limit", () => {
    const Plain = define({ name: "plain", schema: Text, perform: () => Effect.void })
    return withJobs(
      [Plain],
      Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        for (let i = 0; i < 4; i++) yield* enqueue(Plain, { s: String(i) })
        expect(yield* Worker.processQueue({ host: "h", limit: 0, timeout: 0 })).toMatchObject({ processed: 0 })
        expect(yield* Worker.processQueue({ host: "h", limit: 1, timeout: "1 minute" })).toMatchObject({ processed: 1 })
        expect(yield* Worker.processQueue({ host: "h", limit: 1, timeout: Number.POSITIVE_INFINITY })).toMatchObject({
          processed: 1
        })
        expect(yield* Worker.processQueue({ host: "h", limit: 1, timeout: Duration.infinity })).toMatchObject({
          processed: 1
        })
        expect(yield* Worker.processQueue({ host: "h", limit: 0, timeout: [1, 0] })).toMatchObject({ processed: 1 })
      })
    )
  })

  it.effect("drain expiresIn: the edges (none, ≤ 0, infinite, sub-millisecond, the largest exact end) are stored exactly and read back", () =>
    withJobs(
      [],
      Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        const store = yield* JobStore
        yield* Worker.tick({ host: "kept", maxJobs: 0 })
        // ≤ 0 and infinite: no expiry (as documented); sub-millisecond: rounded up
        const edges: ReadonlyArray<readonly [expiresIn: unknown, until: number | null]> = [
          [undefined, null],
          [0, null],
          [-1, null],
          ["-5 seconds", null],
          [Number.POSITIVE_INFINITY, null],
          [Duration.infinity, null],
          ["1 minute", T0 + 60 * SECOND],
          [0.4, T0 + 1],
          [[1, 500_000], T0 + 1001],
          [Number.MAX_SAFE_INTEGER - T0, Number.MAX_SAFE_INTEGER]
        ]
        for (const [i, [expiresIn, until]] of edges.entries()) {
          yield* Worker.drain({ host: `d${i}`, expiresIn: expiresIn as never })
          expect(Option.map(yield* store.getHost(`d${i}`), (h) => [h.draining, h.drainExpiresAt]), String(expiresIn))
            .toEqual(Option.some([true, until]))
        }
        expect((yield* store.listHosts).map((h) => h.host).sort()).toEqual(
          ["kept", ...edges.map((_, i) => `d${i}`)].sort()
        )
        expect(yield* Worker.processNext({ host: `d${edges.length - 1}` })).toEqual(
          Worker.ProcessResult.Draining({ until: Number.MAX_SAFE_INTEGER })
        )
      })
    ))

  it.effect("hostCap 2^31 − 1 (the largest the max_concurrent INT column holds) is stored exactly", () => {
    const Plain = define({ name: "plain", schema: Text, perform: () => Effect.void })
    return withJobs(
      [Plain],
      Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        const { id } = yield* enqueue(Plain, { s: "x" })
        expect(yield* Worker.tick({ host: "h", hostCap: MAX_INT32 })).toMatchObject({ processed: 1, capped: false })
        expect(yield* row(id)).toMatchObject({ status: "completed", claimedBy: "h" })
        expect(Option.map(yield* Effect.flatMap(JobStore, (s) => s.getHost("h")), (h) => h.maxConcurrent)).toEqual(
          Option.some(MAX_INT32)
        )
      })
    )
  })

  // A host ending in a space is refused before any store call: test/unit/workerOptions.test.ts.
  it.effect("a host ending in whitespace other than a space is its own host everywhere", () => {
    const Excl = define({ name: "excl", exclusive: true, schema: Text, perform: () => Effect.void })
    return withJobs(
      [Excl],
      Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        const store = yield* JobStore
        yield* Worker.tick({ host: "th", maxJobs: 0 })
        const { id } = yield* enqueue(Excl, { s: "x" })
        expect(yield* Worker.processNext({ host: "th\t" })).toMatchObject({ _tag: "Completed", job: { id } })
        expect(yield* row(id)).toMatchObject({ claimedBy: "th\t" })
        expect((yield* store.listHosts).map((h) => h.host)).toEqual(["th"])
      })
    )
  })

  it.effect("a stored payload whose concurrencyKeyFor now throws fails its attempt with a clear error, retried under the normal rules; the worker carries on", () =>
    Effect.gen(function*() {
      const p = yield* makeProbe
      // The key function as another version of the app might have it: it passed at enqueue
      // and throws on the stored payload now.
      let mode: "ok" | "throw" | "nul" = "ok"
      const Keyed = define({
        name: "keyed",
        schema: Text,
        maxRetries: 1,
        concurrencyKeyFor: ({ s }) => {
          if (mode === "throw") throw new Error(`no key for ${s}`)
          return mode === "nul" ? `k-${s}\u0000` : `k-${s}`
        },
        perform: p.perform
      })
      yield* withJobs(
        [Keyed],
        Effect.gen(function*() {
          yield* p.bind
          yield* TestClock.setTime(T0)
          const leases = yield* JobLeases
          const a = yield* enqueue(Keyed, { s: "a" })
          mode = "throw"
          const thrown = "concurrencyKeyFor threw: Error: no key for a"
          expect(yield* Worker.processNext({ host: "h" })).toEqual(Worker.ProcessResult.Failed({
            job: { id: a.id, name: "keyed", queue: "default", attempt: 1 },
            error: thrown,
            willRetry: true,
            retryAt: T0 + 4 * SECOND,
            leaseLost: false
          }))
          expect(yield* row(a.id)).toMatchObject({
            status: "pending",
            attempts: 1,
            runAt: T0 + 4 * SECOND,
            lastError: thrown,
            claimToken: null
          })
          expect(yield* leases.list).toEqual([])
          // the last run (maxRetries 1): a key the lock table cannot hold fails it too, and it is dead
          mode = "nul"
          yield* TestClock.adjust(4 * SECOND)
          const tally = yield* Worker.processQueue({ host: "h", limit: 0 })
          expect(tally).toMatchObject({ processed: 0, failed: 1, skipped: 0, fenced: 0 })
          expect(tally.errors).toEqual([expect.stringMatching(/^LeaseInputError: .*NUL/)])
          expect(yield* row(a.id)).toMatchObject({ status: "failed", attempts: 2, failedAt: T0 + 4 * SECOND })
          expect(yield* p.all).toEqual([])

          // the long-running worker records the failure (the row is not left processing) and carries on
          mode = "ok"
          const b = yield* enqueue(Keyed, { s: "b" })
          mode = "throw"
          const scope = yield* Scope.make()
          const context = yield* Layer.buildWithScope(
            Worker.layer({ host: "lw", concurrency: 1, pollInterval: "20 millis" }),
            scope
          )
          const worker = Context.get(context, Worker.WorkerHandle)
          const settled = (f: (s: Worker.WorkerStats) => boolean) =>
            eventually(Effect.zipRight(TestClock.adjust("20 millis"), Effect.map(worker.stats, f)))
          yield* settled((s) => s.failed >= 1)
          expect(yield* worker.stats).toMatchObject({
            processed: 0,
            failed: 1,
            errors: ["concurrencyKeyFor threw: Error: no key for b"]
          })
          expect(yield* row(b.id)).toMatchObject({
            status: "pending",
            attempts: 1,
            lastError: "concurrencyKeyFor threw: Error: no key for b"
          })
          mode = "ok"
          yield* TestClock.adjust(4 * SECOND)
          yield* worker.wake
          yield* settled((s) => s.processed >= 1)
          yield* Scope.close(scope, Exit.void)
          expect(yield* row(b.id)).toMatchObject({ status: "completed", attempts: 2 })
          expect((yield* p.all).map((s) => [s.jobId, Option.map(s.lease, (l) => l.name)])).toEqual([[
            b.id,
            Option.some("key:k-b")
          ]])
          expect(yield* leases.list).toEqual([])
        })
      )
    }))
}
