/**
 * What enqueue refuses before it calls the store (the bad-input catalogue, issue 6): bad
 * payloads fail with PayloadError, bad options with EnqueueInputError. Every check runs against
 * a store that fails the test if it is touched at all (./untouchedStore.ts), which shows that
 * nothing is written and no unique key is taken on any adapter; so it runs once, not on every
 * adapter. What enqueue stores (odd text, edge values) is checked on every adapter in
 * test/conformance/badInput/, and the 256-character unique key of docs/behaviour.md §11 in
 * test/conformance/jobs.ts.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Schema, TestClock } from "effect"
import { type AnyJobType, define, enqueue } from "../../src/runtime/Job.ts"
import { sized, T0, UNSTORABLE } from "../conformance/badInput/inputs.ts"
import { withUntouchedStore } from "./untouchedStore.ts"

const Text = Schema.Struct({ s: Schema.String })
const Plain = define({ name: "plain", schema: Text, perform: () => Effect.void })

it.effect("payloads their schema rejects, or that JSON cannot carry, fail with PayloadError before any store call", () => {
  const Strict = define({
    name: "strict",
    schema: Schema.Struct({ n: Schema.Number, s: Schema.String.pipe(Schema.maxLength(10)) }),
    perform: () => Effect.void
  })
  const Anything = define({ name: "anything", schema: Schema.Unknown, perform: () => Effect.void })
  const Dated = define({
    name: "dated",
    schema: Schema.Struct({ at: Schema.DateFromSelf }),
    perform: () => Effect.void
  })
  const circular: Record<string, unknown> = {}
  circular.self = circular
  const cases: ReadonlyArray<readonly [label: string, type: AnyJobType, payload: unknown, reason: RegExp]> = [
    ["a field of the wrong type", Strict, { n: "1", s: "x" }, /Expected number, actual "1"/],
    ["a missing field", Strict, { s: "x" }, /\["n"\][\s\S]*is missing/],
    ["a refinement (11 characters, at most 10)", Strict, { n: 1, s: "x".repeat(11) }, /at most 10/],
    ["null", Strict, null, /actual null/],
    ["NaN (JSON would store null)", Strict, { n: Number.NaN, s: "x" }, /NaN has no JSON form/],
    ["Infinity", Strict, { n: Number.POSITIVE_INFINITY, s: "x" }, /Infinity has no JSON form/],
    [
      "-Infinity deep inside an unknown payload",
      Anything,
      { a: [1, { b: Number.NEGATIVE_INFINITY }] },
      /-Infinity has no JSON form/
    ],
    ["a bigint", Anything, { n: 10n ** 30n }, /not JSON-serialisable/],
    ["a circular object", Anything, circular, /not JSON-serialisable/],
    ["undefined", Anything, undefined, /encodes to nothing/],
    ["a function", Anything, () => 1, /encodes to nothing/],
    ["a Date object that JSON turns into a string", Dated, { at: new Date(T0) }, /does not decode again/]
  ]
  return withUntouchedStore(
    [Strict, Anything, Dated],
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      for (const [i, [label, type, payload, reason]] of cases.entries()) {
        // a unique key too: a refused enqueue must not take it (it never reaches the store)
        const error = yield* Effect.flip(enqueue(type, payload, { uniqueKey: `bad-${i}` }))
        expect(error, label).toMatchObject({ _tag: "PayloadError", jobName: type.name })
        if (error._tag === "PayloadError") {
          expect(error.reason, label).toMatch(reason)
          expect(error.message, label).toContain(`invalid payload for job ${type.name}`)
        }
      }
    })
  )
})

it.effect("unique keys of 256 and 10,000 characters are refused with the length, before any store call", () => {
  const seeds: ReadonlyArray<readonly [string, string]> = [
    ["plain", "k"],
    ["odd", `'";--\\\t\r\n\x01\x1f\x7f`],
    ["multi-byte", "é名ß"],
    ["emoji (two code units each)", "🚀👩‍👧"]
  ]
  return withUntouchedStore(
    [Plain],
    Effect.gen(function*() {
      for (const n of [256, 10_000]) {
        for (const [label, seed] of seeds) {
          const key = sized(n, seed)
          expect(key).toHaveLength(n)
          const error = yield* Effect.flip(enqueue(Plain, { s: label }, { uniqueKey: key }))
          expect(error, `${n} ${label}`).toMatchObject({
            _tag: "EnqueueInputError",
            field: "uniqueKey",
            reason: `is ${n} characters; at most 255 fit`
          })
        }
      }
    })
  )
})

it.effect("unstorable, empty and space-ended unique keys are refused before any store call", () =>
  withUntouchedStore(
    [Plain],
    Effect.gen(function*() {
      for (const [label, key] of [...UNSTORABLE, ["empty", ""], ["a trailing space", "k "]] as const) {
        expect(yield* Effect.flip(enqueue(Plain, { s: label }, { uniqueKey: key })), label).toMatchObject({
          _tag: "EnqueueInputError",
          field: "uniqueKey"
        })
      }
    })
  ))

it.effect("queues that are empty, over 255 characters, unstorable or end in a space are refused before any store call", () =>
  withUntouchedStore(
    [Plain],
    Effect.gen(function*() {
      for (
        const [label, queue] of [["empty", ""], ["256 characters", sized(256)], ["10,000 characters", sized(10_000)], [
          "a trailing space",
          "mail "
        ], ...UNSTORABLE]
      ) {
        expect(yield* Effect.flip(enqueue(Plain, { s: "x" }, { queue: queue! })), label).toMatchObject({
          _tag: "EnqueueInputError",
          field: "queue"
        })
      }
    })
  ))

it.effect("concurrency keys the lock table cannot hold, or a concurrencyKeyFor that throws, are refused before any store call", () => {
  const Keyed = define({
    name: "keyed",
    schema: Schema.Struct({ key: Schema.String }),
    concurrencyKeyFor: (x) => x.key,
    perform: () => Effect.void
  })
  const Throws = define({
    name: "throws",
    schema: Text,
    concurrencyKeyFor: () => {
      throw new Error("no key for you")
    },
    perform: () => Effect.void
  })
  return withUntouchedStore(
    [Keyed, Throws],
    Effect.gen(function*() {
      for (const [label, key] of UNSTORABLE) {
        const error = yield* Effect.flip(enqueue(Keyed, { key }))
        expect(error, label).toMatchObject({ _tag: "EnqueueInputError", field: "concurrencyKey" })
      }
      const threw = yield* Effect.flip(enqueue(Throws, { s: "x" }))
      expect(threw).toMatchObject({
        _tag: "EnqueueInputError",
        field: "concurrencyKey",
        reason: "concurrencyKeyFor threw: Error: no key for you"
      })
    })
  )
})

it.effect("NaN, negative, infinite, fractional and huge runAt, delay and priority are refused with EnqueueInputError before any store call", () => {
  const bad: ReadonlyArray<readonly [field: string, options: Record<string, unknown>]> = [
    ...[Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5, -1, -T0, 2 ** 53, 1e308, -1e308].map((
      runAt
    ) => ["runAt", { runAt }] as const),
    ...[
      Number.NaN,
      -1,
      -0.5,
      Number.NEGATIVE_INFINITY,
      Number.POSITIVE_INFINITY,
      2 ** 53,
      1e308,
      Number.MAX_SAFE_INTEGER - T0 + 1
    ].map((delay) => ["delay", { delay }] as const),
    ...["NaN seconds", "-5 seconds", "-0.5 millis", "Infinity", "soon", "1e308 seconds"].map((delay) =>
      ["delay", { delay }] as const
    ),
    ...[[Number.NaN, 0], [-1, 0], [0, -1], [1e308, 0], [Number.POSITIVE_INFINITY, 0]].map((delay) =>
      ["delay", { delay }] as const
    ),
    ...[-5n, 10n ** 40n].map((delay) => ["delay", { delay }] as const),
    ...[
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      1.5,
      2 ** 31,
      -(2 ** 31) - 1,
      2 ** 53,
      1e308,
      -1e308
    ]
      .map((priority) => ["priority", { priority }] as const)
  ]
  return withUntouchedStore(
    [Plain],
    Effect.gen(function*() {
      // the delay that just overflows is measured from now
      yield* TestClock.setTime(T0)
      for (const [field, options] of bad) {
        const error = yield* Effect.flip(enqueue(Plain, { s: "bad" }, options as never))
        expect(error, `${field} ${String(Object.values(options)[0])}`).toMatchObject({
          _tag: "EnqueueInputError",
          field
        })
      }
    })
  )
})
