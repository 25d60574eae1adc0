/**
 * One log line per finished attempt at info, with its duration (src/runtime/worker/observe.ts),
 * for every entry point; none when the minimum level is above info.
 */
import { expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect, HashMap, List, Logger, LogLevel, Schema, TestClock } from "effect"
import { define, enqueue, jobsLayer } from "../../src/runtime/Job.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { JobStore } from "../../src/JobStore.ts"
import { TestLeasehold } from "../../src/testing.ts"
import { claimInput, skewed } from "../support/jobs.ts"

interface Line {
  readonly level: string
  readonly message: unknown
  readonly annotations: Record<string, unknown>
}

const capture = (lines: Array<Line>) =>
  Logger.add(Logger.make(({ annotations, logLevel, message }) => {
    lines.push({
      level: logLevel.label,
      message: List.isList(message) ? List.toArray(message)[0] : Array.isArray(message) ? message[0] : message,
      annotations: Object.fromEntries(HashMap.toEntries(annotations))
    })
  }))

// Takes 1.5 s of the TestClock; fails when asked to.
const Timed = define({
  name: "timed",
  queue: "q",
  maxRetries: 1,
  schema: Schema.Struct({ fail: Schema.Boolean }),
  perform: ({ fail }) =>
    Effect.zipRight(TestClock.adjust("1500 millis"), fail ? Effect.fail(new Error("no")) : Effect.void)
})

it.effect("each finished attempt logs one info line with its outcome and duration", () => {
  const lines: Array<Line> = []
  return Effect.gen(function*() {
    const ok = yield* enqueue(Timed, { fail: false })
    yield* Worker.processNext({ host: "h" })
    yield* enqueue(Timed, { fail: true })
    yield* Worker.processQueue({ limit: 1 })
    const info = lines.filter((l) => l.level === "INFO" && String(l.message).startsWith("attempt"))
    expect(info.map((l) => l.message)).toEqual([
      "attempt completed in 1500 ms",
      // The retry's time, not its delay beside the duration (which read as "retry in 1500 ms").
      "attempt failed after 1500 ms; retrying at 1970-01-01T00:00:07.000Z"
    ])
    expect(info[0]!.annotations).toEqual({
      jobId: ok.id,
      jobName: "timed",
      attempt: 1,
      queue: "q",
      outcome: "completed",
      durationMs: 1500
    })
  }).pipe(Effect.provide(TestLeasehold.layer({ jobs: [Timed] })), Effect.provide(capture(lines)))
})

it.effect("above info, no attempt line is written", () => {
  const lines: Array<Line> = []
  return Effect.gen(function*() {
    yield* enqueue(Timed, { fail: false })
    expect(yield* Worker.processNext({ host: "h" })).toMatchObject({ _tag: "Completed" })
    expect(lines.filter((l) => String(l.message).startsWith("attempt"))).toEqual([])
  }).pipe(
    Effect.provide(TestLeasehold.layer({ jobs: [Timed] })),
    Logger.withMinimumLogLevel(LogLevel.Warning),
    Effect.provide(capture(lines))
  )
})

// Logs one line from inside perform.
const Logged = define({
  name: "logged",
  queue: "q",
  schema: Schema.Struct({ n: Schema.Number }),
  perform: ({ n }) => Effect.logInfo(`performing ${n}`)
})

it.effect("a long-running worker's attempts each log with their own job, and with the worker's annotations", () => {
  const lines: Array<Line> = []
  return Effect.gen(function*() {
    const done = yield* Deferred.make<void>()
    let finished = 0
    const ids = yield* Effect.scoped(Effect.gen(function*() {
      yield* Worker.make({
        host: "h",
        concurrency: 1,
        onResult: () => Effect.suspend(() => (++finished === 3 ? Deferred.succeed(done, undefined) : Effect.void))
      })
      const ids = [
        (yield* enqueue(Logged, { n: 1 })).id,
        (yield* enqueue(Logged, { n: 2 })).id,
        (yield* enqueue(Logged, { n: 3 })).id
      ]
      yield* Deferred.await(done)
      return ids
    })).pipe(Effect.annotateLogs({ app: "billing" }))
    const byMessage = new Map(lines.map((l) => [String(l.message), l.annotations]))
    for (const [i, id] of ids.entries()) {
      expect(byMessage.get(`performing ${i + 1}`)).toEqual({ app: "billing", jobId: id, jobName: "logged", attempt: 1 })
    }
    const outcomes = lines.filter((l) => String(l.message).startsWith("attempt completed"))
    expect(outcomes.map((l) => l.annotations.jobId).sort()).toEqual([...ids].sort())
    for (const l of outcomes) expect(l.annotations).toMatchObject({ app: "billing", jobName: "logged", attempt: 1 })
    // The worker's own lines (started, stopped) name no job.
    const own = lines.filter((l) => String(l.message).startsWith("worker h"))
    expect(own.map((l) => String(l.message).split(":")[0])).toEqual(["worker h started", "worker h stopped"])
    for (const l of own) expect(l.annotations).toEqual({ app: "billing" })
  }).pipe(Effect.provide(TestLeasehold.layer({ jobs: [Logged] })), Effect.provide(capture(lines)))
})

it.effect("a reaped attempt's warning carries its job, as the attempt's own lines do", () => {
  const lines: Array<Line> = []
  return Effect.gen(function*() {
    const { id } = yield* enqueue(Logged, { n: 1 })
    // Claimed by a worker that then vanished: an hour later its row is stale.
    const store = yield* JobStore
    expect(yield* store.claim(claimInput(yield* Clock.currentTimeMillis, "vanished"))).toMatchObject({
      _tag: "Claimed"
    })
    expect(yield* skewed(3_600_000, Worker.reap({ host: "r" }))).toBe(1)
    const warnings = lines.filter((l) => l.level === "WARN" && String(l.message).startsWith("reaped logged"))
    expect(warnings.map((l) => l.annotations)).toEqual([{ jobId: id, jobName: "logged", attempt: 1 }])
  }).pipe(Effect.provide(TestLeasehold.layer({ jobs: [Logged] })), Effect.provide(capture(lines)))
})

// Logs one line from inside perform; runs one at a time per key.
const Keyed = define({
  name: "keyed",
  queue: "q",
  schema: Schema.Struct({ n: Schema.Number, key: Schema.String }),
  concurrencyKeyFor: (p) => p.key,
  perform: ({ n }) => Effect.logInfo(`performing ${n}`)
})
// The same job type in a later version of the app: its key is another.
const KeyedLater = define({
  name: "keyed",
  queue: "q",
  schema: Keyed.schema,
  concurrencyKeyFor: (p) => `${p.key}-v2`,
  perform: ({ n }) => Effect.logInfo(`performing ${n}`)
})

// Runs `n` jobs in a long-running worker with one runner, so each attempt follows another's.
const runInWorker = (n: number) =>
  Effect.scoped(Effect.gen(function*() {
    const done = yield* Deferred.make<void>()
    let finished = 0
    yield* Worker.make({
      host: "h",
      concurrency: 1,
      onResult: () => Effect.suspend(() => (++finished === n ? Deferred.succeed(done, undefined) : Effect.void))
    })
    yield* Deferred.await(done)
  }))

// The line `message`'s leaseName annotation, and the outcome line after it.
const leaseNames = (lines: ReadonlyArray<Line>, message: string) => {
  const at = lines.findIndex((l) => l.message === message)
  const outcome = lines.slice(at).find((l) => String(l.message).startsWith("attempt completed"))
  return [lines[at]?.annotations.leaseName, outcome?.annotations.leaseName]
}

it.effect("an attempt with a lease logs the lease's name; one without, on the same runner next, does not", () => {
  const lines: Array<Line> = []
  return Effect.gen(function*() {
    yield* enqueue(Keyed, { n: 1, key: "acct-1" })
    yield* enqueue(Logged, { n: 2 })
    yield* enqueue(Keyed, { n: 3, key: "acct-3" })
    yield* runInWorker(3)
    yield* enqueue(Keyed, { n: 4, key: "acct-4" })
    expect(yield* Worker.processNext({ host: "h" })).toMatchObject({ _tag: "Completed" })
    yield* enqueue(Logged, { n: 5 })
    expect(yield* Worker.processNext({ host: "h" })).toMatchObject({ _tag: "Completed" })
    expect(leaseNames(lines, "performing 1")).toEqual(["key:acct-1", "key:acct-1"])
    expect(leaseNames(lines, "performing 2")).toEqual([undefined, undefined])
    expect(leaseNames(lines, "performing 3")).toEqual(["key:acct-3", "key:acct-3"])
    expect(leaseNames(lines, "performing 4")).toEqual(["key:acct-4", "key:acct-4"])
    expect(leaseNames(lines, "performing 5")).toEqual([undefined, undefined])
  }).pipe(Effect.provide(TestLeasehold.layer({ jobs: [Keyed, Logged] })), Effect.provide(capture(lines)))
})

it.effect("an attempt whose job type now names another lease logs that one, not the one enqueued", () => {
  const lines: Array<Line> = []
  return Effect.gen(function*() {
    // Enqueued by the earlier version (its lease, key:acct-1, is stored with the job).
    yield* enqueue(Keyed, { n: 1, key: "acct-1" })
    yield* enqueue(Keyed, { n: 2, key: "acct-2" })
    yield* Effect.provide(runInWorker(2), jobsLayer(KeyedLater))
    yield* enqueue(Keyed, { n: 3, key: "acct-3" })
    expect(yield* Effect.provide(Worker.processNext({ host: "h" }), jobsLayer(KeyedLater))).toMatchObject({
      _tag: "Completed"
    })
    expect(leaseNames(lines, "performing 1")).toEqual(["key:acct-1-v2", "key:acct-1-v2"])
    expect(leaseNames(lines, "performing 2")).toEqual(["key:acct-2-v2", "key:acct-2-v2"])
    expect(leaseNames(lines, "performing 3")).toEqual(["key:acct-3-v2", "key:acct-3-v2"])
  }).pipe(Effect.provide(TestLeasehold.layer({ jobs: [Keyed] })), Effect.provide(capture(lines)))
})

it.effect("a caller's own leaseName annotation stays on the lines of an attempt without a lease", () => {
  const lines: Array<Line> = []
  return Effect.gen(function*() {
    yield* enqueue(Logged, { n: 1 })
    yield* enqueue(Keyed, { n: 2, key: "acct-2" })
    const run = Worker.processNext({ host: "h" }).pipe(Effect.annotateLogs({ leaseName: "the caller's" }))
    expect(yield* run).toMatchObject({ _tag: "Completed" })
    expect(yield* run).toMatchObject({ _tag: "Completed" })
    expect(leaseNames(lines, "performing 1")).toEqual(["the caller's", "the caller's"])
    expect(leaseNames(lines, "performing 2")).toEqual(["key:acct-2", "key:acct-2"])
  }).pipe(Effect.provide(TestLeasehold.layer({ jobs: [Keyed, Logged] })), Effect.provide(capture(lines)))
})
