/**
 * Bad-input catalogue, rows and numbers (issue 6): stored payloads that no longer decode and
 * rows naming an unknown job type fail their attempts under the normal retry rules; the edge
 * values Job.define and enqueue accept (priorities, retries, timeouts, runAt, delays, backoff)
 * are stored exactly. Their refusals, which happen before any store call, run once in
 * test/unit/define.test.ts and test/unit/enqueue.test.ts.
 */
import { expect } from "@effect/vitest"
import { Effect, Schema, TestClock } from "effect"
import type { JobRow } from "../../../src/JobStore.ts"
import { MAX_BACKOFF_SECONDS, MAX_TIMEOUT_SECONDS } from "../../../src/core/jobs.ts"
import { MAX_INT32, MIN_INT32 } from "../../../src/core/input.ts"
import { define, enqueue } from "../../../src/runtime/Job.ts"
import * as Worker from "../../../src/runtime/Worker.ts"
import { withJobs } from "../../support/jobs.ts"
import { type BadInputArea, insertRow, makeProbe, row, Text } from "./helpers.ts"
import { SECOND, T0 } from "./inputs.ts"

/** The stored-rows and numbers area of the catalogue. */
export const enqueueArea: BadInputArea = (it) => {
  it.effect("stored payloads that no longer decode fail their attempt with a clear error, retried under the normal rules", () =>
    Effect.gen(function*() {
      const p = yield* makeProbe
      const V2 = define({
        name: "v2",
        schema: Schema.Struct({ n: Schema.Number, s: Schema.String }),
        perform: p.perform
      })
      const garbled: ReadonlyArray<readonly [label: string, payload: string, reason: RegExp]> = [
        ["not JSON", "{not json", /JSON/],
        ["empty", "", /JSON/],
        ["a truncated object", `{"n":1,"s":"ab`, /JSON/],
        ["JSON null", "null", /actual null/],
        ["an array", "[]", /actual \[\]/],
        ["a field of the wrong type", `{"n":"one","s":"x"}`, /Expected number/],
        ["written by an older version (a field missing)", `{"n":1}`, /is missing/],
        ["an escaped NUL where a number belongs", `{"n":"\\u0000","s":"x"}`, /Expected number/]
      ]
      yield* withJobs(
        [V2],
        Effect.gen(function*() {
          yield* p.bind
          yield* TestClock.setTime(T0)
          const ids: Array<string> = []
          for (const [i, [, payload]] of garbled.entries()) {
            ids.push(yield* insertRow({ name: "v2", payload, maxRetries: 1, priority: 100 - i }))
          }
          const good = yield* insertRow({ name: "v2", payload: `{"n":9,"s":"fine"}`, maxRetries: 1, priority: -1 })
          // one pass: every garbled row fails, the good one after them still runs
          const first = yield* Worker.processQueue({ host: "h", limit: 0 })
          expect(first).toMatchObject({ processed: 1, failed: garbled.length, skipped: 0, fenced: 0 })
          for (const [i, [label, , reason]] of garbled.entries()) {
            expect(first.errors[i], label).toMatch(
              /^PayloadError: invalid payload for job v2: stored payload no longer decodes: /
            )
            expect(first.errors[i], label).toMatch(reason)
            const r = yield* row(ids[i]!)
            expect(r, label).toMatchObject({
              status: "pending",
              attempts: 1,
              runAt: T0 + 4 * SECOND,
              payload: garbled[i]![1]
            })
            expect(r.lastError, label).toContain("no longer decodes")
          }
          expect((yield* p.all).map((s) => s.payload)).toEqual([{ n: 9, s: "fine" }])
          expect((yield* row(good)).status).toBe("completed")
          // the second run (the last of maxRetries 1) fails too, and the rows are dead
          yield* TestClock.adjust(4 * SECOND)
          expect(yield* Worker.processQueue({ host: "h", limit: 0 })).toMatchObject({
            processed: 0,
            failed: garbled.length
          })
          for (const id of ids) {
            expect(yield* row(id)).toMatchObject({ status: "failed", attempts: 2, failedAt: T0 + 4 * SECOND })
          }
        })
      )
    }))

  it.effect("rows naming an unknown job type fail with UnknownJobTypeError, are retried under the normal rules, and end dead", () =>
    Effect.gen(function*() {
      const p = yield* makeProbe
      const Known = define({ name: "café", schema: Text, perform: p.perform })
      const unknown: ReadonlyArray<readonly [label: string, name: string]> = [
        ["a type this worker never heard of", "Retired"],
        ["SQL in the name", "x'); DROP TABLE jobs; --"],
        ["the registered name in capitals", "CAFÉ"],
        ["the registered name in NFD", "cafe\u0301"],
        ["the registered name with a trailing tab", "café\t"],
        ["emoji and right-to-left", "🚀 שלום"]
      ]
      yield* withJobs(
        [Known],
        Effect.gen(function*() {
          yield* p.bind
          yield* TestClock.setTime(T0)
          const ids: Array<string> = []
          for (const [i, [, name]] of unknown.entries()) {
            ids.push(yield* insertRow({ name, payload: `{"s":"x"}`, maxRetries: 2, priority: 100 - i }))
          }
          const known = yield* enqueue(Known, { s: "known" })
          const message = (name: string) =>
            `UnknownJobTypeError: no job type named ${JSON.stringify(name)} is registered with this worker`
          // retries at the default backoff (4 s, 8 s), then dead after maxRetries + 1 = 3 runs
          for (const [run, wait] of [[1, 4], [2, 8], [3, 0]] as const) {
            const tally = yield* Worker.processQueue({ host: "h", limit: 0 })
            expect(tally).toMatchObject({ processed: run === 1 ? 1 : 0, failed: unknown.length })
            expect(tally.errors).toEqual(unknown.map(([, name]) => message(name)))
            for (const [i, [label, name]] of unknown.entries()) {
              const r = yield* row(ids[i]!)
              expect(r, label).toMatchObject({ name, attempts: run, lastError: message(name) })
              expect(r, label).toMatchObject(
                run < 3 ? { status: "pending", runAt: T0 + (run === 1 ? 4 : 12) * SECOND } : { status: "failed" }
              )
            }
            yield* TestClock.adjust(wait * SECOND)
          }
          expect(yield* row(known.id)).toMatchObject({ status: "completed", attempts: 1 })
          expect((yield* p.all).map((s) => s.name)).toEqual(["café"])
        })
      )
    }))

  // What Job.define refuses, and the values it resolves the edges to: test/unit/define.test.ts.
  it.effect("Job.define: the edge values (sub-second and longest timeouts, lowest and highest priority, most retries) are stored exactly", () => {
    const base = { name: "n", schema: Text, perform: () => Effect.void }
    const edges = [
      define({ ...base, name: "sub-second timeout", timeout: 0.5 }),
      define({ ...base, name: "tuple timeout", timeout: [1, 500_000_000] }),
      define({ ...base, name: "longest timeout", timeout: `${MAX_TIMEOUT_SECONDS} seconds` }),
      define({ ...base, name: "lowest priority", priority: MIN_INT32, maxRetries: 0 }),
      define({ ...base, name: "highest priority", priority: MAX_INT32, maxRetries: MAX_INT32 })
    ]
    return withJobs(
      edges,
      Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        const ids: Array<string> = []
        for (const type of edges) ids.push((yield* enqueue(type, { s: type.name })).id)
        for (const [i, type] of edges.entries()) {
          expect(yield* row(ids[i]!), type.name).toMatchObject({
            name: type.name,
            claimTimeout: type.timeoutSeconds,
            priority: type.priority,
            maxRetries: type.maxRetries
          })
        }
        // the highest priority runs first, the lowest last
        const order: Array<string> = []
        for (let i = 0; i < edges.length; i++) {
          const r = yield* Worker.processNext({ host: "h" })
          if (r._tag === "Completed") order.push(r.job.name)
        }
        expect(order[0]).toBe("highest priority")
        expect(order[order.length - 1]).toBe("lowest priority")
      })
    )
  })

  // The refusals of NaN, negative, infinite, fractional and huge values: test/unit/enqueue.test.ts.
  it.effect("enqueue: the edges of runAt, delay and priority are stored exactly", () => {
    const Plain = define({ name: "plain", schema: Text, perform: () => Effect.void })
    return withJobs(
      [Plain],
      Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        yield* enqueue(Plain, { s: "kept" })
        const edges: ReadonlyArray<
          readonly [label: string, options: Record<string, unknown>, expected: Partial<JobRow>]
        > = [
          ["runAt 0 (the epoch)", { runAt: 0 }, { runAt: 0 }],
          ["runAt at the largest exact value", { runAt: Number.MAX_SAFE_INTEGER }, { runAt: Number.MAX_SAFE_INTEGER }],
          ["delay 0", { delay: 0 }, { runAt: T0 }],
          ["a sub-millisecond delay (rounded up)", { delay: 0.4 }, { runAt: T0 + 1 }],
          ["a delay as a tuple", { delay: [1, 500_000] }, { runAt: T0 + 1001 }],
          ["a delay in nanoseconds", { delay: 1_500_000n }, { runAt: T0 + 2 }],
          ["a delay up to the largest exact value", { delay: Number.MAX_SAFE_INTEGER - T0 }, {
            runAt: Number.MAX_SAFE_INTEGER
          }],
          ["the lowest priority", { priority: MIN_INT32 }, { priority: MIN_INT32 }],
          ["the highest priority", { priority: MAX_INT32 }, { priority: MAX_INT32 }]
        ]
        const ids: Array<string> = []
        for (const [label, options, expected] of edges) {
          const { id } = yield* enqueue(Plain, { s: label }, options)
          ids.push(id)
          expect(yield* row(id), label).toMatchObject(expected)
        }
        // due now: the kept job, runAt 0, delay 0 and both priorities; then the short delays; the
        // largest runAt never, even a century on
        expect(yield* Worker.processQueue({ host: "h", limit: 0 })).toMatchObject({ processed: 5, failed: 0 })
        yield* TestClock.adjust("36500 days")
        expect(yield* Worker.processQueue({ host: "h", limit: 0 })).toMatchObject({ processed: 3, failed: 0 })
        for (const i of [1, 6]) expect((yield* row(ids[i]!)).status).toBe("pending")
      })
    )
  })

  it.effect("backoff: a fractional base gives whole-millisecond retry times, and the longest backoff is stored exactly", () => {
    const fail = () => Effect.fail("no")
    const Tiny = define({ name: "tiny", schema: Text, maxRetries: 5, backoff: { baseSeconds: 0.0004 }, perform: fail })
    const TinyLinear = define({
      name: "tiny-linear",
      schema: Text,
      maxRetries: 5,
      backoff: { kind: "linear", baseSeconds: 0.0001 },
      perform: fail
    })
    const Longest = define({
      name: "longest",
      schema: Text,
      maxRetries: 1,
      backoff: { baseSeconds: MAX_BACKOFF_SECONDS, maxSeconds: MAX_BACKOFF_SECONDS },
      perform: fail
    })
    return withJobs(
      [Tiny, TinyLinear, Longest],
      Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        const expectRetry = (id: string, retryAt: number) =>
          Effect.gen(function*() {
            expect(yield* Worker.processNext({ host: "h" })).toMatchObject({
              _tag: "Failed",
              job: { id },
              willRetry: true,
              retryAt
            })
            expect(yield* row(id)).toMatchObject({ status: "pending", runAt: retryAt })
          })
        const tiny = yield* enqueue(Tiny, { s: "x" })
        // 0.0004 s × 2^1 = 0.8 ms → 1 ms; then × 2^2 = 1.6 ms → 2 ms
        yield* expectRetry(tiny.id, T0 + 1)
        yield* TestClock.adjust(1)
        yield* expectRetry(tiny.id, T0 + 1 + 2)
        yield* TestClock.adjust(2)
        // linear 0.0001 s × 1 = 0.1 ms: at least 1 ms
        const linear = yield* enqueue(TinyLinear, { s: "x" }, { priority: 1 })
        yield* expectRetry(linear.id, T0 + 3 + 1)
        const longest = yield* enqueue(Longest, { s: "x" }, { priority: 2 })
        yield* expectRetry(longest.id, T0 + 3 + MAX_BACKOFF_SECONDS * 1000)
      })
    )
  })
}
