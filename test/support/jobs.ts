/**
 * Helpers for job-system conformance tests: empty job tables per test, the worker services for
 * them, test job types that record their runs, and a Clock offset for skewed workers.
 */
import { Clock, Context, Deferred, Duration, Effect, Layer, Ref, Schema } from "effect"
import { JobLeases, JobStore } from "../../src/JobStore.ts"
import type { ScheduleStore } from "../../src/ports/ScheduleStore.ts"
import { type AnyJobType, define, heartbeat, JobContext, Jobs, jobsLayer } from "../../src/runtime/Job.ts"
import type { ClaimInput } from "../../src/core/model.ts"
import { TestDatabase } from "./databases.ts"

/** Options of `withJobs`. */
export interface WithJobsOptions {
  /**
   * Migrate tables of the test's own under a fresh prefix instead of emptying the suite's
   * shared ones: for a test that drops or otherwise damages a table.
   */
  readonly ownTables?: boolean | undefined
}

/**
 * Runs `effect` with the worker services on empty, migrated job tables of this adapter: the
 * suite's shared tables (migrated once per layer, emptied here before the test), or with
 * `ownTables` freshly migrated tables under a prefix of the test's own.
 */
export const withJobs = <A, E, R>(
  types: ReadonlyArray<AnyJobType>,
  effect: Effect.Effect<A, E, R>,
  options: WithJobsOptions = {}
): Effect.Effect<A, E, Exclude<R, JobStore | JobLeases | ScheduleStore | Jobs> | TestDatabase> =>
  Effect.gen(function*() {
    const db = yield* TestDatabase
    let prefix: string
    if (options.ownTables === true) {
      prefix = db.table("j") + "_"
      yield* db.migrate(prefix)
    } else {
      prefix = yield* db.sharedJobTables
      yield* db.clearJobTables(prefix)
    }
    const layer = Layer.merge(db.storeLayer(prefix), jobsLayer(...types))
    return yield* Effect.provide(effect, layer)
  })

/** A log of runs shared by test job types: which payloads ran, in order, with their attempt. */
export class RunLog extends Context.Tag("test/RunLog")<
  RunLog,
  Ref.Ref<ReadonlyArray<{ readonly id: string; readonly n: number; readonly attempt: number }>>
>() {}

/** Payload of the test job types. */
export const Payload = Schema.Struct({ n: Schema.Number, key: Schema.optional(Schema.String) })

/** A job that records its run and succeeds. */
export const Ok = define({
  name: "ok",
  schema: Payload,
  perform: ({ n }) =>
    Effect.gen(function*() {
      const ctx = yield* JobContext
      const log = yield* RunLog
      yield* Ref.update(log, (l) => [...l, { id: ctx.jobId, n, attempt: ctx.attempt }])
    })
})

/** A job that always fails. */
export const Boom = define({
  name: "boom",
  schema: Payload,
  maxRetries: 2,
  perform: ({ n }) => Effect.fail(new Error(`boom ${n}`))
})

/** A job whose perform says it started (optionally heartbeats) and then waits on a gate the test opens. */
export const gated = (
  name: string,
  gate: Deferred.Deferred<void>,
  options: {
    readonly idempotent?: boolean
    readonly timeout?: Duration.DurationInput
    readonly beat?: boolean
    readonly started?: Deferred.Deferred<void>
  } = {}
) =>
  define({
    name,
    schema: Payload,
    idempotent: options.idempotent,
    timeout: options.timeout,
    perform: () =>
      Effect.gen(function*() {
        if (options.beat === true) yield* heartbeat
        if (options.started !== undefined) yield* Deferred.succeed(options.started, undefined)
        yield* Deferred.await(gate)
      })
  })

const realSleep = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/**
 * Waits (in real time, up to 10 s) until `check` holds. With a real database, a forked worker's
 * queries are in flight while the test adjusts the TestClock; this lets it reach its next
 * sleep (or write) first.
 */
export const eventually = <E, R>(check: Effect.Effect<boolean, E, R>): Effect.Effect<void, E, R> =>
  Effect.gen(function*() {
    for (let i = 0; i < 1000; i++) {
      if (yield* check) return
      yield* realSleep(10)
    }
    return yield* Effect.dieMessage("condition not reached within 10 s")
  })

/** Lets in-flight work of forked fibers settle (real time), before a TestClock adjustment. */
export const settle = Effect.zipRight(realSleep(20), Effect.yieldNow())

/** A Clock that reads `offsetMs` ahead of the current one (a worker with a skewed clock). */
export const offsetClock = (base: Clock.Clock, offsetMs: number): Clock.Clock => ({
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  currentTimeMillis: Effect.map(base.currentTimeMillis, (t) => t + offsetMs),
  currentTimeNanos: Effect.map(base.currentTimeNanos, (t) => t + BigInt(offsetMs) * 1_000_000n),
  unsafeCurrentTimeMillis: () => base.unsafeCurrentTimeMillis() + offsetMs,
  unsafeCurrentTimeNanos: () => base.unsafeCurrentTimeNanos() + BigInt(offsetMs) * 1_000_000n,
  sleep: (d) => base.sleep(d)
})

/** Runs `effect` as a worker whose clock is `offsetMs` ahead. */
export const skewed = <A, E, R>(offsetMs: number, effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.clock, (base) => Effect.withClock(effect, offsetClock(base, offsetMs)))

/**
 * A store claim's input (src/core/model.ts `ClaimInput`) for host "h" at `now`, all queues, no
 * caps; with `perKey`, a claim by key.
 */
export const claimInput = (now: number, claimToken: string, perKey?: ClaimInput["perKey"]): ClaimInput => ({
  queues: undefined,
  host: "h",
  now,
  claimToken,
  timeoutCap: undefined,
  hostCap: undefined,
  perKey
})
