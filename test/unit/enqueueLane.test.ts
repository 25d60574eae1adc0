/**
 * The enqueues' lane (src/adapters/sql/enqueueLane.ts): at most its places at once, first come,
 * first served; waiting jobs go together when a place frees; a batch enqueue goes alone; an
 * interrupted caller leaves the line and loses no place. Its statements here are stand-ins that
 * record what they were given and wait until the test lets them end.
 */
import { expect, it } from "@effect/vitest"
import { SqlError } from "@effect/sql/SqlError"
import { Deferred, Effect, Exit, Fiber } from "effect"
import fc from "fast-check"
import type { NewJob } from "../../src/core/model.ts"
import { type EnqueueLane, makeEnqueueLane } from "../../src/adapters/sql/enqueueLane.ts"

const job = (id: string): NewJob => ({
  id,
  name: "t",
  queue: "default",
  payload: "{}",
  priority: 0,
  maxRetries: 0,
  claimTimeout: 60,
  uniqueKey: id,
  runAt: 0,
  now: 0
})

/** A lane whose statements record their jobs and end when `open` is called for them. */
const recordingLane = (places: number, maxTogether = 100, freeOnNextTurn = false) =>
  Effect.gen(function*() {
    const sent: Array<ReadonlyArray<string>> = []
    const gates: Array<Deferred.Deferred<void, SqlError>> = []
    const statement = (ids: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void, SqlError>()
        sent.push(ids)
        gates.push(gate)
        yield* Deferred.await(gate)
        return ids.map((id) => ({ id, duplicate: false }))
      })
    const lane = makeEnqueueLane({
      places,
      maxTogether,
      freeOnNextTurn,
      one: (j) => Effect.map(statement([j.id]), (r) => r[0]!),
      together: (jobs) => statement(jobs.map((j) => j.id))
    }, yield* Effect.runtime<never>())
    /** Ends the `n`-th statement sent, successfully or with `error`. */
    const open = (n: number, error?: SqlError) =>
      error === undefined ? Deferred.succeed(gates[n]!, undefined) : Deferred.fail(gates[n]!, error)
    return { lane, sent, open }
  })

/** Forks one insert per id, each a fiber of its own, and lets them reach the lane. */
const insertAll = (lane: EnqueueLane, ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const fibers = []
    for (const id of ids) fibers.push(yield* Effect.fork(lane.insert(job(id))))
    yield* settle
    return fibers
  })

const settle = Effect.repeatN(Effect.yieldNow(), 20)

it.effect("with a place free a job goes at once, alone; the jobs that waited go together, in order, when one frees", () =>
  Effect.gen(function*() {
    const { lane, open, sent } = yield* recordingLane(2)
    const first = yield* insertAll(lane, ["a", "b"])
    expect(sent).toEqual([["a"], ["b"]])
    const waiting = yield* insertAll(lane, ["c", "d", "e"])
    expect(sent).toHaveLength(2)
    yield* open(0)
    yield* settle
    expect(sent).toEqual([["a"], ["b"], ["c", "d", "e"]])
    yield* open(1)
    yield* open(2)
    for (const [fiber, id] of [...first, ...waiting].map((f, i) => [f, "abcde"[i]!] as const)) {
      expect(yield* Fiber.join(fiber)).toEqual({ id, duplicate: false })
    }
    // Every place is back: the next job goes at once.
    yield* insertAll(lane, ["f"])
    expect(sent[3]).toEqual(["f"])
  }))

it.effect("a statement carries at most maxTogether jobs; the rest wait for the next place", () =>
  Effect.gen(function*() {
    const { lane, open, sent } = yield* recordingLane(1, 3)
    yield* insertAll(lane, ["a"])
    const fibers = yield* insertAll(lane, ["b", "c", "d", "e", "f"])
    yield* open(0)
    yield* settle
    expect(sent).toEqual([["a"], ["b", "c", "d"]])
    yield* open(1)
    yield* settle
    expect(sent).toEqual([["a"], ["b", "c", "d"], ["e", "f"]])
    yield* open(2)
    yield* Fiber.joinAll(fibers)
  }))

it.effect("a batch enqueue in line goes alone when its turn comes; jobs behind it go after", () =>
  Effect.gen(function*() {
    const { lane, open, sent } = yield* recordingLane(1)
    yield* insertAll(lane, ["a"])
    const ran: Array<string> = []
    const batch = yield* Effect.fork(lane.alone(Effect.sync(() => ran.push(`batch after ${sent.length}`))))
    yield* settle
    const behind = yield* insertAll(lane, ["b"])
    expect(ran).toEqual([])
    yield* open(0)
    yield* Fiber.join(batch)
    yield* settle
    expect(ran).toEqual(["batch after 1"])
    expect(sent).toEqual([["a"], ["b"]])
    yield* open(1)
    yield* Fiber.joinAll(behind)
  }))

it.effect("a failed statement fails every job it carried, and its place goes on", () =>
  Effect.gen(function*() {
    const { lane, open, sent } = yield* recordingLane(1)
    const [a] = yield* insertAll(lane, ["a"])
    const [b, c] = yield* insertAll(lane, ["b", "c"])
    yield* open(0)
    yield* settle
    const error = new SqlError({ message: "the database went away" })
    yield* open(1, error)
    expect(yield* Fiber.join(a!)).toEqual({ id: "a", duplicate: false })
    for (const f of [b!, c!]) expect(yield* Effect.flip(Fiber.join(f))).toBe(error)
    yield* insertAll(lane, ["d"])
    expect(sent).toEqual([["a"], ["b", "c"], ["d"]])
  }))

it.effect("a caller interrupted in line leaves it: its job is never sent and no place is lost", () =>
  Effect.gen(function*() {
    const { lane, open, sent } = yield* recordingLane(1)
    yield* insertAll(lane, ["a"])
    const [gone] = yield* insertAll(lane, ["gone"])
    const goneBatch = yield* Effect.fork(lane.alone(Effect.sync(() => sent.push(["batch"]))))
    const [kept] = yield* insertAll(lane, ["kept"])
    yield* Fiber.interrupt(gone!)
    yield* Fiber.interrupt(goneBatch)
    yield* open(0)
    yield* settle
    expect(sent).toEqual([["a"], ["kept"]])
    yield* open(1)
    expect(yield* Fiber.join(kept!)).toEqual({ id: "kept", duplicate: false })
    yield* insertAll(lane, ["next"])
    expect(sent).toEqual([["a"], ["kept"], ["next"]])
  }))

it.live("freed on the next turn: a fiber woken by the first job runs before the waiting jobs are sent", () =>
  Effect.gen(function*() {
    const order: Array<string> = []
    const lane = makeEnqueueLane({
      places: 1,
      maxTogether: 100,
      freeOnNextTurn: true,
      one: (j) => Effect.sync(() => (order.push(j.id), { id: j.id, duplicate: false })),
      together: (jobs) => Effect.sync(() => jobs.map((j) => (order.push(j.id), { id: j.id, duplicate: false })))
    }, yield* Effect.runtime<never>())
    const woken = yield* Deferred.make<void>()
    const watcher = yield* Effect.fork(Effect.zipRight(Deferred.await(woken), Effect.sync(() => order.push("woken"))))
    yield* Effect.yieldNow()
    // All ready at once, as an app's `Promise.all` of enqueues; the first wakes the watcher.
    yield* Effect.forEach(
      ["a", "b", "c"],
      (id) => Effect.tap(lane.insert(job(id)), () => (id === "a" ? Deferred.succeed(woken, undefined) : Effect.void)),
      { concurrency: "unbounded", discard: true }
    )
    yield* Fiber.join(watcher)
    expect(order).toEqual(["a", "woken", "b", "c"])
  }))

it("whatever the interleaving of inserts, interruptions and statements ending, no place is lost and every job is sent once (fast-check)", () =>
  fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 3 }),
      fc.array(
        fc.oneof(fc.constant("insert" as const), fc.constant("end" as const), fc.constant("interrupt" as const)),
        {
          maxLength: 30
        }
      ),
      (places, steps) =>
        Effect.runPromise(Effect.gen(function*() {
          const { lane, open, sent } = yield* recordingLane(places, 2)
          const fibers: Array<Fiber.RuntimeFiber<unknown, unknown>> = []
          const interrupted = new Set<string>()
          let opened = 0
          let n = 0
          for (const step of steps) {
            if (step === "insert") fibers.push(...(yield* insertAll(lane, [`j${n++}`])))
            else if (step === "end" && opened < sent.length) yield* open(opened++)
            else if (step === "interrupt" && fibers.length > 0) {
              const i = fibers.length - 1
              interrupted.add(`j${i}`)
              yield* Fiber.interrupt(fibers[i]!)
            }
            yield* settle
          }
          // Let everything end: every statement sent ends, and what waited is sent in turn.
          while (opened < sent.length) {
            yield* open(opened++)
            yield* settle
          }
          const ids = sent.flat()
          expect(new Set(ids).size).toBe(ids.length)
          for (let i = 0; i < n; i++) {
            if (!interrupted.has(`j${i}`)) expect(ids).toContain(`j${i}`)
          }
          // All places are free again: `places` jobs go at once.
          const before = sent.length
          yield* insertAll(lane, Array.from({ length: places }, (_, i) => `last${i}`))
          expect(sent.length - before).toBe(places)
          for (const f of fibers) yield* Fiber.await(f)
        }))
    ),
    { numRuns: 200 }
  ))
