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
const recordingLane = (places: number, maxTogether = 100, maxBytes = 1_000_000) =>
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
      maxBytes,
      freeOnNextTurn: false,
      one: (j) => Effect.map(statement([j.id]), (r) => r[0]!),
      together: (jobs) => statement(jobs.map((j) => j.id)),
      refused: (e) => e.message === REFUSED
    })
    /** Ends the `n`-th statement sent, successfully or with `error`. */
    const open = (n: number, error?: SqlError) =>
      error === undefined ? Deferred.succeed(gates[n]!, undefined) : Deferred.fail(gates[n]!, error)
    return { lane, sent, open, statement }
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

/** The message of a statement the database refused for one of its rows. */
const REFUSED = "a row it would not take"

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

it.effect("a batch enqueue in line goes alone when its turn comes; jobs behind it go after, not before", () =>
  Effect.gen(function*() {
    const { lane, open, sent } = yield* recordingLane(1)
    yield* insertAll(lane, ["a"])
    const before = yield* insertAll(lane, ["b"])
    const ran: Array<string> = []
    const batch = yield* Effect.fork(lane.alone(Effect.sync(() => ran.push(`batch after ${sent.length}`))))
    yield* settle
    const behind = yield* insertAll(lane, ["c"])
    expect(ran).toEqual([])
    yield* open(0)
    yield* settle
    // b went first, alone: c, behind the batch enqueue, did not join it.
    expect(sent).toEqual([["a"], ["b"]])
    yield* open(1)
    yield* Fiber.join(batch)
    yield* settle
    expect(ran).toEqual(["batch after 2"])
    expect(sent).toEqual([["a"], ["b"], ["c"]])
    yield* open(2)
    yield* Fiber.joinAll([...before, ...behind])
  }))

it.effect("a statement's jobs stop at maxBytes of payload; a larger job goes alone", () =>
  Effect.gen(function*() {
    const { lane, open, sent } = yield* recordingLane(1, 100, 10)
    yield* insertAll(lane, ["a"])
    // Payloads of 2 bytes ("{}") each: five fit in 10 bytes.
    const fibers = yield* insertAll(lane, ["b", "c", "d", "e", "f", "g"])
    const big = yield* Effect.fork(lane.insert({ ...job("big"), payload: JSON.stringify({ x: "y".repeat(50) }) }))
    yield* settle
    for (let n = 0; n < 3; n++) {
      yield* open(n)
      yield* settle
    }
    expect(sent).toEqual([["a"], ["b", "c", "d", "e", "f"], ["g"], ["big"]])
    yield* open(3)
    yield* Fiber.joinAll([...fibers, big])
  }))

it.effect("a statement of several jobs the database refused is sent again one job at a time", () =>
  Effect.gen(function*() {
    const { lane, open, sent } = yield* recordingLane(1)
    yield* insertAll(lane, ["a"])
    const [b, c] = yield* insertAll(lane, ["b", "c"])
    yield* open(0)
    yield* settle
    yield* open(1, new SqlError({ message: REFUSED }))
    yield* settle
    expect(sent).toEqual([["a"], ["b", "c"], ["b"]])
    yield* open(2, new SqlError({ message: REFUSED }))
    yield* settle
    expect(sent).toEqual([["a"], ["b", "c"], ["b"], ["c"]])
    yield* open(3)
    expect((yield* Effect.flip(Fiber.join(b!))).message).toBe(REFUSED)
    expect(yield* Fiber.join(c!)).toEqual({ id: "c", duplicate: false })
  }))

it.effect("a statement that failed otherwise (the database went away) fails every job it carried; its place goes on", () =>
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
      maxBytes: 1_000_000,
      freeOnNextTurn: true,
      one: (j) => Effect.sync(() => (order.push(j.id), { id: j.id, duplicate: false })),
      together: (jobs) => Effect.sync(() => jobs.map((j) => (order.push(j.id), { id: j.id, duplicate: false }))),
      refused: () => false
    })
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

it("whatever the interleaving of inserts, batch enqueues, interruptions and statements ending, no place is lost or made and every job is sent once (fast-check)", () =>
  fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 3 }),
      fc.array(
        fc.oneof(
          fc.constant({ kind: "insert" as const }),
          fc.constant({ kind: "alone" as const }),
          fc.constant({ kind: "end" as const }),
          fc.nat().map((i) => ({ kind: "interrupt" as const, i }))
        ),
        { maxLength: 40 }
      ),
      (places, steps) =>
        Effect.runPromise(Effect.gen(function*() {
          const { lane, open, sent, statement } = yield* recordingLane(places, 2)
          const callers: Array<{ readonly id: string; readonly fiber: Fiber.RuntimeFiber<unknown, unknown> }> = []
          const interrupted = new Set<string>()
          let opened = 0
          let n = 0
          for (const step of steps) {
            if (step.kind === "insert") {
              const id = `j${n++}`
              callers.push({ id, fiber: (yield* insertAll(lane, [id]))[0]! })
            } else if (step.kind === "alone") {
              const id = `batch${n++}`
              callers.push({ id, fiber: yield* Effect.fork(lane.alone(statement([id]))) })
            } else if (step.kind === "end" && opened < sent.length) yield* open(opened++)
            else if (step.kind === "interrupt" && callers.length > 0) {
              const caller = callers[step.i % callers.length]!
              interrupted.add(caller.id)
              yield* Fiber.interrupt(caller.fiber)
            }
            yield* settle
            // Never more statements in flight than places, but for those of callers interrupted
            // meanwhile: their place is free at once, their statement still runs on its own.
            const inFlight = sent.slice(opened).filter((ids) => !ids.every((id) => interrupted.has(id)))
            expect(inFlight.length).toBeLessThanOrEqual(places)
          }
          // Let everything end: every statement sent ends, and what waited is sent in turn.
          while (opened < sent.length) {
            yield* open(opened++)
            yield* settle
          }
          const ids = sent.flat()
          expect(new Set(ids).size).toBe(ids.length)
          for (const { id } of callers) if (!interrupted.has(id)) expect(ids).toContain(id)
          // All places are free again, and no more: `places` jobs go at once, the next one waits.
          const before = sent.length
          const last = yield* insertAll(lane, Array.from({ length: places + 1 }, (_, i) => `last${i}`))
          expect(sent.length - before).toBe(places)
          while (opened < sent.length) {
            yield* open(opened++)
            yield* settle
          }
          yield* Fiber.joinAll(last)
        }))
    ),
    { numRuns: 300 }
  ))
