/**
 * No per-job state is kept once a job is done: 20,000 jobs run through the worker on the memory
 * store, in batches of 1,000 whose rows are then purged; after a forced full collection the heap
 * in use stays within a small bound of what it was after the first batch. A Map, a cache or a
 * metric series that grew per job (not per job type or key) would fail it long before 20,000.
 */
import { Effect, Logger, LogLevel, Schema } from "effect"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { describe, expect, it } from "vitest"
import { JobStore } from "../../src/JobStore.ts"
import { define, enqueueMany } from "../../src/runtime/Job.ts"
import { processQueue } from "../../src/runtime/Worker.ts"
import { TestLeasehold } from "../../src/testing.ts"

// A full collection on demand, without starting the test process with --expose-gc.
setFlagsFromString("--expose-gc")
const gc = runInNewContext("gc") as () => void

const heapAfterGc = () => {
  for (let i = 0; i < 3; i++) gc()
  return process.memoryUsage().heapUsed
}

const BATCH = 1000
const BATCHES = 20
/** What the heap may grow by over the 19 batches after the first: far below 19 × 1,000 jobs' rows. */
const BOUND_BYTES = 4 * 1024 * 1024

const Noop = define({ name: "HeapNoop", schema: Schema.Struct({ n: Schema.Number }), perform: () => Effect.void })

describe("heap", () => {
  it("20,000 jobs keep nothing per job: after a forced GC the heap is within 4 MiB of the first 1,000's", async () => {
    const run = Effect.gen(function*() {
      const store = yield* JobStore
      const batch = (b: number) =>
        Effect.gen(function*() {
          yield* enqueueMany(Noop, Array.from({ length: BATCH }, (_, i) => ({ n: b * BATCH + i })))
          const tally = yield* processQueue({ limit: 0 })
          expect(tally.processed).toBe(BATCH)
          yield* store.purge("completed", Number.MAX_SAFE_INTEGER)
        })
      yield* batch(0)
      const first = heapAfterGc()
      for (let b = 1; b < BATCHES; b++) yield* batch(b)
      const last = heapAfterGc()
      return { first, last }
    })
    // Without log lines: the test runner keeps what a test writes, a line per attempt at info.
    const { first, last } = await Effect.runPromise(
      run.pipe(Effect.provide(TestLeasehold.layer({ jobs: [Noop] })), Logger.withMinimumLogLevel(LogLevel.None))
    )
    expect(last - first, `heap after the first batch ${first} B, after all ${last} B`).toBeLessThan(BOUND_BYTES)
  }, 120_000)
})
