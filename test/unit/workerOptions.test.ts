/**
 * What the worker's entry points (processNext, processQueue, claimAndRun, reap, tick, drain,
 * resume, the long-running worker) refuse before they call the store (the bad-input catalogue,
 * issue 6; docs/behaviour.md §9): bad options fail with WorkerConfigError. Every check runs
 * against a store that fails the test if it is touched at all (./untouchedStore.ts), which shows
 * that nothing is written on any adapter; so it runs once, not on every adapter. The accepted
 * edge values are checked on every adapter in test/conformance/badInput/worker.ts.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Schema, TestClock } from "effect"
import { MAX_CONCURRENCY } from "../../src/core/jobs.ts"
import { MAX_INT32 } from "../../src/core/input.ts"
import { define } from "../../src/runtime/Job.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { sized, T0, UNSTORABLE } from "../conformance/badInput/inputs.ts"
import { withUntouchedStore } from "./untouchedStore.ts"

const Plain = define({ name: "plain", schema: Schema.Struct({ s: Schema.String }), perform: () => Effect.void })

type Call = Effect.Effect<unknown, { readonly _tag: string }, Worker.WorkerServices>

it.effect("hosts that are empty, over 255 characters or unstorable fail with WorkerConfigError before any store call", () =>
  withUntouchedStore(
    [Plain],
    Effect.gen(function*() {
      for (
        const [label, host] of [
          ["empty", ""],
          ["256 characters", sized(256)],
          ["10,000 characters", sized(10_000)],
          ...UNSTORABLE
        ]
      ) {
        const calls: ReadonlyArray<Call> = [
          Worker.processNext({ host: host! }),
          Worker.processQueue({ host: host! }),
          Worker.tick({ host: host! }),
          Worker.drain({ host: host! }),
          Worker.resume({ host: host! }),
          Effect.scoped(Worker.make({ host: host! }))
        ]
        for (const call of calls) {
          expect(yield* Effect.flip(call), label).toMatchObject({ _tag: "WorkerConfigError", field: "host" })
        }
      }
    })
  ))

it.effect("a host ending in a space fails with WorkerConfigError before any store call (MariaDB would take it for the host without it)", () =>
  withUntouchedStore(
    [Plain],
    Effect.gen(function*() {
      for (const host of ["th ", "th  ", " ", "   ", `${sized(254)} `, "tab\t "]) {
        const calls: ReadonlyArray<Call> = [
          Worker.processNext({ host }),
          Worker.processQueue({ host }),
          Worker.tick({ host }),
          Worker.claimAndRun({ host }),
          Worker.reap({ host }),
          Worker.drain({ host }),
          Worker.resume({ host }),
          Effect.scoped(Worker.make({ host, concurrency: 1 }))
        ]
        for (const call of calls) {
          const error = yield* Effect.flip(call)
          expect(error, JSON.stringify(host)).toMatchObject({
            _tag: "WorkerConfigError",
            field: "host",
            reason: expect.stringMatching(/ends with a space/)
          })
        }
      }
    })
  ))

it.effect("worker options: NaN, negative, infinite, fractional and huge values fail with WorkerConfigError before any store call", () => {
  const durations = [
    Number.NaN,
    -1,
    0,
    Number.NEGATIVE_INFINITY,
    Number.POSITIVE_INFINITY,
    "NaN seconds",
    "-5 seconds",
    "soon",
    [Number.NaN, 0],
    [-1, 0]
  ]
  const counts = [Number.NaN, -1, 1.5, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY, 2 ** 53, 1e308]
  const bad: ReadonlyArray<readonly [field: string, run: Call]> = [
    ...durations.map((d) => ["timeoutCap", Worker.processNext({ host: "h", timeoutCap: d as never })] as const),
    ...durations.map((d) => ["timeoutCap", Worker.tick({ host: "h", timeoutCap: d as never })] as const),
    ...counts.map((n) => ["hostCap", Worker.processNext({ host: "h", hostCap: n })] as const),
    ...counts.map((n) => ["hostCap", Worker.processQueue({ host: "h", hostCap: n })] as const),
    ...[0, ...counts].map((n) => ["reapLimit", Worker.processNext({ host: "h", reapLimit: n })] as const),
    ...[0, ...counts].map((n) => ["concurrency", Effect.scoped(Worker.make({ host: "h", concurrency: n }))] as const),
    ...durations.map((d) =>
      ["pollInterval", Effect.scoped(Worker.make({ host: "h", pollInterval: d as never }))] as const
    ),
    ...durations.map((d) =>
      ["reapInterval", Effect.scoped(Worker.make({ host: "h", reapInterval: d as never }))] as const
    ),
    ...durations.map((d) =>
      ["gracePeriod", Effect.scoped(Worker.make({ host: "h", gracePeriod: d as never }))] as const
    ),
    ...durations.map((d) => ["timeoutCap", Effect.scoped(Worker.make({ host: "h", timeoutCap: d as never }))] as const)
  ]
  return withUntouchedStore(
    [Plain],
    Effect.gen(function*() {
      for (const [i, [field, run]] of bad.entries()) {
        expect(yield* Effect.flip(run), `${i} ${field}`).toMatchObject({ _tag: "WorkerConfigError", field })
      }
    })
  )
})

it.effect("bad worker options fail with a typed WorkerConfigError before any store call", () =>
  withUntouchedStore(
    [Plain],
    Effect.gen(function*() {
      const bad: ReadonlyArray<Call> = [
        Worker.processNext({ timeoutCap: Number.NaN }),
        Worker.processNext({ timeoutCap: -5 }),
        Worker.processNext({ hostCap: -1 }),
        Worker.processNext({ hostCap: 1.5 }),
        Worker.processNext({ host: "h".repeat(256) }),
        Worker.processQueue({ reapLimit: 0 }),
        Effect.scoped(Worker.make({ concurrency: 0 })),
        Effect.scoped(Worker.make({ pollInterval: Number.POSITIVE_INFINITY })),
        Effect.scoped(Worker.make({ gracePeriod: -1 }))
      ]
      for (const effect of bad) {
        const error = yield* Effect.flip(effect)
        expect(error._tag).toBe("WorkerConfigError")
      }
    })
  ))

it.effect("processQueue limit and tick maxJobs: NaN, negative, infinite, fractional and huge counts fail with WorkerConfigError before any store call", () =>
  // before: NaN and -1 processed nothing, 1.5 processed 2, and tick wrote its host row first
  withUntouchedStore(
    [Plain],
    Effect.gen(function*() {
      for (
        const n of [Number.NaN, -1, -0.5, 0.5, 1.5, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY, 2 ** 53, 1e308]
      ) {
        expect(yield* Effect.flip(Worker.processQueue({ host: "h", limit: n })), `limit ${n}`).toMatchObject({
          _tag: "WorkerConfigError",
          field: "limit"
        })
        expect(yield* Effect.flip(Worker.tick({ host: "h", maxJobs: n })), `maxJobs ${n}`).toMatchObject({
          _tag: "WorkerConfigError",
          field: "maxJobs"
        })
      }
    })
  ))

it.effect("processQueue timeout: NaN, negative and undecodable durations fail with WorkerConfigError before any store call", () => {
  // before: NaN and negatives processed nothing (or everything), and "NaN seconds" died untyped
  const bad = [
    Number.NaN,
    -1,
    -0.5,
    Number.NEGATIVE_INFINITY,
    "NaN seconds",
    "-5 seconds",
    "-0.5 millis",
    "soon",
    "Infinity",
    "1e308 seconds",
    [Number.NaN, 0],
    [0, Number.NaN],
    [-1, 0],
    [0, -1],
    [-1, Number.POSITIVE_INFINITY],
    -5n
  ]
  return withUntouchedStore(
    [Plain],
    Effect.gen(function*() {
      for (const timeout of bad) {
        expect(
          yield* Effect.flip(Worker.processQueue({ host: "h", limit: 0, timeout: timeout as never })),
          String(timeout)
        )
          .toMatchObject({ _tag: "WorkerConfigError", field: "timeout" })
      }
    })
  )
})

it.effect("drain expiresIn: NaN, undecodable and too-large durations fail with WorkerConfigError before any store call", () => {
  // before: NaN drained forever, "NaN seconds" died untyped, and 1e308 wrote now + 1e308
  // (an SqlError on PostgreSQL and MySQL; on SQLite stored, and every host read then threw)
  const bad = [
    Number.NaN,
    "NaN seconds",
    "soon",
    "Infinity",
    "1e308 seconds",
    [Number.NaN, 0],
    [0, Number.NaN],
    1e308,
    2 ** 53,
    Number.MAX_SAFE_INTEGER - T0 + 1,
    [1e300, 0],
    10n ** 40n
  ]
  return withUntouchedStore(
    [],
    Effect.gen(function*() {
      // "too large" is measured from now: now + the largest accepted value is the largest exact epoch ms
      yield* TestClock.setTime(T0)
      for (const expiresIn of bad) {
        for (const host of ["kept", "new"]) {
          expect(
            yield* Effect.flip(Worker.drain({ host, expiresIn: expiresIn as never })),
            `${host} ${String(expiresIn)}`
          )
            .toMatchObject({ _tag: "WorkerConfigError", field: "expiresIn" })
        }
      }
    })
  )
})

it.effect("hostCap above 2^31 − 1 (the max_concurrent INT column) fails with WorkerConfigError before any store call", () =>
  withUntouchedStore(
    [Plain],
    Effect.gen(function*() {
      for (const hostCap of [MAX_INT32 + 1, 2 ** 32, Number.MAX_SAFE_INTEGER]) {
        const calls: ReadonlyArray<Call> = [
          Worker.processNext({ host: "h", hostCap }),
          Worker.processQueue({ host: "h", hostCap }),
          Worker.tick({ host: "h", hostCap }),
          Worker.claimAndRun({ host: "h", hostCap }),
          Effect.scoped(Worker.make({ host: "h", hostCap, concurrency: 1 }))
        ]
        for (const call of calls) {
          expect(yield* Effect.flip(call), String(hostCap)).toMatchObject({
            _tag: "WorkerConfigError",
            field: "hostCap"
          })
        }
      }
    })
  ))

it.effect("concurrency above the documented maximum (1,000) fails with WorkerConfigError before any store call", () =>
  withUntouchedStore(
    [],
    Effect.gen(function*() {
      expect(MAX_CONCURRENCY).toBe(1000)
      for (const concurrency of [MAX_CONCURRENCY + 1, 10_000, MAX_INT32, 2 ** 53]) {
        const error = yield* Effect.flip(Effect.scoped(Worker.make({ host: "h", concurrency })))
        expect(error, String(concurrency)).toMatchObject({ _tag: "WorkerConfigError", field: "concurrency" })
        if (error._tag === "WorkerConfigError") expect(error.reason).toMatch(/1 to 1000/)
      }
    })
  ))
