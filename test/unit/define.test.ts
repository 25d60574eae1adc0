/**
 * What Job.define refuses (the bad-input catalogue, issue 6): it throws JobDefinitionError when
 * the app starts, before any store exists, so this runs once rather than on every adapter. That
 * the accepted edge values are stored exactly is checked on every adapter in
 * test/conformance/badInput/enqueue.ts and text.ts.
 */
import { Effect, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { JobDefinitionError } from "../../src/core/errors.ts"
import { MAX_TIMEOUT_SECONDS } from "../../src/core/jobs.ts"
import { MAX_INT32, MIN_INT32 } from "../../src/core/input.ts"
import { define } from "../../src/runtime/Job.ts"
import { sized, UNSTORABLE } from "../conformance/badInput/inputs.ts"

const Text = Schema.Struct({ s: Schema.String })

/** What a synchronous call threw (Job.define throws its JobDefinitionError at definition time). */
const thrown = (f: () => unknown): unknown => {
  try {
    f()
  } catch (e) {
    return e
  }
  return undefined
}

const expectDefinitionError = (f: () => unknown, name: string, reason: RegExp) => {
  const error = thrown(f)
  expect(error).toBeInstanceOf(JobDefinitionError)
  expect(error).toMatchObject({ _tag: "JobDefinitionError", name: "JobDefinitionError", jobName: name })
  expect((error as JobDefinitionError).reason).toMatch(reason)
}

describe("Job.define refuses what no table can hold", () => {
  it("names that are blank, over 255 characters, unstorable or end in a space", () => {
    const refused: ReadonlyArray<readonly [string, RegExp]> = [
      ["", /1 to 255 characters/],
      [" \t\n", /1 to 255 characters/],
      [sized(256), /1 to 255 characters/],
      [sized(10_000), /1 to 255 characters/],
      ...UNSTORABLE.map(([, name]) => [name, /^the name contains/] as const),
      // PAD SPACE: on MariaDB `x ` is `x`, and the lease `job:x ` could never be taken
      ["x ", /^the name ends with a space/]
    ]
    for (const [name, reason] of refused) {
      expectDefinitionError(() => define({ name, schema: Text, perform: () => Effect.void }), name, reason)
    }
    // the longest name is accepted
    expect(define({ name: sized(255), schema: Text, perform: () => Effect.void }).name).toBe(sized(255))
  })

  it("queues that are empty, over 255 characters, unstorable or end in a space", () => {
    const refusedQueues: ReadonlyArray<readonly [string, RegExp]> = [
      ["", /^queue must be 1 to 255/],
      [sized(256), /^queue must be 1 to 255/],
      ...UNSTORABLE.map(([, q]) => [q, /^queue contains/] as const),
      // PAD SPACE: on MariaDB a worker for `mail` would claim the jobs of `mail `
      ["mail ", /^queue ends with a space/]
    ]
    for (const [queue, reason] of refusedQueues) {
      expectDefinitionError(() => define({ name: "q", queue, schema: Text, perform: () => Effect.void }), "q", reason)
    }
    expect(define({ name: "q", queue: sized(255), schema: Text, perform: () => Effect.void }).queue).toBe(sized(255))
  })

  it("a static concurrency key that is unstorable", () => {
    for (const [, key] of UNSTORABLE) {
      expectDefinitionError(
        () => define({ name: "s", schema: Text, concurrencyKey: key, perform: () => Effect.void }),
        "s",
        /^concurrencyKey contains/
      )
    }
  })

  it("NaN, negative, infinite, fractional and huge numbers are refused; the edges resolve exactly", () => {
    const base = { name: "n", schema: Text, perform: () => Effect.void }
    const bad: ReadonlyArray<readonly [field: string, options: Record<string, unknown>]> = [
      ...[
        Number.NaN,
        -1,
        0,
        Number.NEGATIVE_INFINITY,
        Number.POSITIVE_INFINITY,
        2 ** 53,
        1e308,
        (MAX_TIMEOUT_SECONDS + 1) * 1000
      ]
        .map((timeout) => ["timeout", { timeout }] as const),
      ...["NaN seconds", "-5 seconds", "1e308 seconds", "Infinity", "forever", `${MAX_TIMEOUT_SECONDS + 1} seconds`]
        .map((timeout) => ["timeout", { timeout }] as const),
      ...[[Number.NaN, 0], [-1, 0], [0, -1], [1e308, 0], [0, 0]].map((timeout) => ["timeout", { timeout }] as const),
      ...[-5n, 0n, 10n ** 40n].map((timeout) => ["timeout", { timeout }] as const),
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
        .map((priority) => ["priority", { priority }] as const),
      ...[Number.NaN, -1, Number.POSITIVE_INFINITY, 1.5, 2 ** 31, 2 ** 53, 1e308].map((maxRetries) =>
        ["maxRetries", { maxRetries }] as const
      ),
      ...[
        { baseSeconds: Number.NaN },
        { baseSeconds: 0 },
        { baseSeconds: -1 },
        { baseSeconds: Number.POSITIVE_INFINITY },
        { baseSeconds: 10, maxSeconds: 5 },
        { maxSeconds: Number.NaN },
        { maxSeconds: Number.POSITIVE_INFINITY },
        { maxSeconds: 2 ** 53 },
        { maxSeconds: 1e308 },
        { kind: "fibonacci" }
      ].map((backoff) => ["backoff", { backoff }] as const),
      ["backoff", { backoff: "quadratic" }],
      ["onLeaseLost", { onLeaseLost: "explode" }]
    ]
    for (const [field, options] of bad) {
      expectDefinitionError(() => define({ ...base, ...options } as never), "n", new RegExp(`^${field} `))
    }
    const edges = [
      define({ ...base, name: "sub-second timeout", timeout: 0.5 }),
      define({ ...base, name: "tuple timeout", timeout: [1, 500_000_000] }),
      define({ ...base, name: "longest timeout", timeout: `${MAX_TIMEOUT_SECONDS} seconds` }),
      define({ ...base, name: "lowest priority", priority: MIN_INT32, maxRetries: 0 }),
      define({ ...base, name: "highest priority", priority: MAX_INT32, maxRetries: MAX_INT32 })
    ]
    expect(edges.map((t) => [t.timeoutSeconds, t.priority, t.maxRetries])).toEqual([
      [1, 0, 3],
      [2, 0, 3],
      [MAX_TIMEOUT_SECONDS, 0, 3],
      [300, MIN_INT32, 0],
      [300, MAX_INT32, MAX_INT32]
    ])
  })
})
