/**
 * Attempt history and dead jobs by filter (docs/behaviour.md §12): every ended attempt is
 * recorded on its job (start, end, outcome, error, host), the last 25 kept, by every path that
 * ends one (an outcome, a batch of completions, a finish that releases a lease; a reap in
 * ./jobs.ts); dead
 * jobs are retried or discarded by name, queue, status, age or ids, cancelled ones only when a
 * filter names them. Every adapter must pass it.
 * Timing runs under TestClock.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Either, Option, TestClock } from "effect"
import { JobFilterError } from "../../src/core/errors.ts"
import { JobStore } from "../../src/JobStore.ts"
import { cancel, define, discardDead, enqueue, retryDead } from "../../src/runtime/Job.ts"
import { processNext } from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor } from "../support/databases.ts"
import { Payload, withJobs } from "../support/jobs.ts"

const T0 = 1_791_039_632_175
const SECOND = 1000
const MINUTE = 60 * SECOND

const row = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.getOrThrow))
const exists = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.isSome))

const Fine = define({ name: "fine", schema: Payload, perform: () => Effect.void })
const Held = define({ name: "held", schema: Payload, exclusive: true, perform: () => Effect.void })
const Flaky = define({
  name: "flaky",
  schema: Payload,
  maxRetries: 1,
  backoff: { kind: "linear", baseSeconds: 1, maxSeconds: 1 },
  perform: ({ n }) => Effect.fail(new Error(`flaky ${n}`))
})
const Stubborn = define({
  name: "stubborn",
  schema: Payload,
  maxRetries: 30,
  backoff: { kind: "linear", baseSeconds: 1, maxSeconds: 1 },
  perform: () => Effect.fail(new Error("again"))
})
const DeadA = define({ name: "dead-a", schema: Payload, maxRetries: 0, perform: () => Effect.fail(new Error("a")) })
const DeadB = define({
  name: "dead-b",
  queue: "other",
  schema: Payload,
  maxRetries: 0,
  perform: () => Effect.fail(new Error("b"))
})

export const historyConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "hi"), { timeout: 180_000 })(`History and dead jobs conformance on ${adapter}`, (it) => {
    it.effect("each ended attempt is recorded: its number, claim and end times, outcome, error and host", () =>
      withJobs(
        [Flaky, Fine],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const { id } = yield* enqueue(Flaky, { n: 7 })
          expect((yield* row(id)).history).toEqual([])
          yield* processNext({ host: "h1" })
          yield* TestClock.adjust(2 * SECOND)
          yield* processNext({ host: "h2" })
          const dead = yield* row(id)
          expect(dead.status).toBe("failed")
          expect(dead.history).toEqual([
            { attempt: 1, startedAt: T0, endedAt: T0, outcome: "failed", error: dead.lastError, host: "h1" },
            {
              attempt: 2,
              startedAt: T0 + 2 * SECOND,
              endedAt: T0 + 2 * SECOND,
              outcome: "dead",
              error: dead.lastError,
              host: "h2"
            }
          ])
          expect(dead.lastError).toContain("flaky 7")
          const fine = yield* enqueue(Fine, { n: 1 })
          yield* processNext({ host: "h3" })
          expect((yield* row(fine.id)).history).toEqual([
            {
              attempt: 1,
              startedAt: T0 + 2 * SECOND,
              endedAt: T0 + 2 * SECOND,
              outcome: "completed",
              error: null,
              host: "h3"
            }
          ])
        })
      ))

    it.effect("completions sent together and a finish that releases a lease record their attempts too", () =>
      withJobs(
        [Fine, Held],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const plain = yield* Effect.forEach([1, 2, 3], (n) => enqueue(Fine, { n }))
          const held = yield* enqueue(Held, { n: 4 })
          yield* Effect.all([1, 2, 3, 4].map(() => processNext({ host: "w" })), { concurrency: "unbounded" })
          for (const { id } of [...plain, held]) {
            expect((yield* row(id)).history).toEqual([
              { attempt: 1, startedAt: T0, endedAt: T0, outcome: "completed", error: null, host: "w" }
            ])
          }
        })
      ))

    it.effect("a job keeps its last 25 attempts, oldest dropped first", () =>
      withJobs(
        [Stubborn],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const { id } = yield* enqueue(Stubborn, { n: 1 })
          for (let i = 0; i < 27; i++) {
            expect(yield* processNext({ host: "h" })).toMatchObject({ _tag: "Failed" })
            yield* TestClock.adjust(SECOND)
          }
          const { history } = yield* row(id)
          expect(history.map((h) => h.attempt)).toEqual(Array.from({ length: 25 }, (_, i) => i + 3))
          expect(history[24]).toEqual({
            attempt: 27,
            startedAt: T0 + 26 * SECOND,
            endedAt: T0 + 26 * SECOND,
            outcome: "failed",
            error: "Error: again",
            host: "h"
          })
        })
      ))

    it.effect("retryDead and discardDead take dead jobs by name, queue, status, age and ids; nothing else", () =>
      withJobs(
        [DeadA, DeadB, Fine],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const oldA = yield* Effect.forEach([1, 2, 3], (n) => enqueue(DeadA, { n }))
          const b = yield* Effect.forEach([4, 5], (n) => enqueue(DeadB, { n }))
          for (let i = 0; i < 5; i++) yield* processNext({ host: "h" })
          yield* TestClock.adjust(60 * MINUTE)
          const newA = yield* enqueue(DeadA, { n: 6 })
          yield* processNext({ host: "h" })
          const done = yield* enqueue(Fine, { n: 7 })
          yield* processNext({ host: "h" })
          const waiting = yield* enqueue(DeadA, { n: 8 }, { delay: "1 hour" })

          // Bad filters change nothing.
          for (
            const bad of [
              { status: "pending" as "failed" },
              { olderThan: -1 },
              { name: "" },
              { ids: [""] }
            ]
          ) {
            const refused = yield* Effect.either(retryDead(bad))
            expect(Either.isLeft(refused) && refused.left).toBeInstanceOf(JobFilterError)
          }
          expect((yield* row(oldA[0]!.id)).status).toBe("failed")

          expect(yield* retryDead({ name: "dead-a", olderThan: "30 minutes" })).toBe(3)
          for (const { id } of oldA) {
            const r = yield* row(id)
            expect(r).toMatchObject({ status: "pending", attempts: 0, runAt: T0 + 60 * MINUTE, failedAt: null })
            expect(r.history).toMatchObject([{ attempt: 1, outcome: "dead", error: "Error: a" }])
          }
          expect((yield* row(newA.id)).status).toBe("failed")
          expect(yield* retryDead({ status: "interrupted" })).toBe(0)
          expect(yield* discardDead({ queue: "other" })).toBe(2)
          for (const { id } of b) expect(yield* exists(id)).toBe(false)
          expect(yield* discardDead({ ids: [] })).toBe(0)
          expect(yield* discardDead({ ids: [newA.id, done.id, waiting.id] })).toBe(1)
          expect(yield* exists(newA.id)).toBe(false)
          // Pending, completed and waiting jobs are never taken, with or without a filter.
          expect(yield* discardDead()).toBe(0)
          expect((yield* row(done.id)).status).toBe("completed")
          expect((yield* row(waiting.id)).status).toBe("pending")
          expect((yield* row(oldA[0]!.id)).status).toBe("pending")
        })
      ))

    it.effect("cancelled jobs are retried or discarded only when a filter names them: status cancelled, or their ids", () =>
      withJobs(
        [Fine, DeadA],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const [a, b, c] = yield* Effect.forEach([1, 2, 3], (n) => enqueue(Fine, { n }))
          for (const { id } of [a!, b!, c!]) yield* cancel(id)
          const dead = yield* enqueue(DeadA, { n: 4 })
          yield* processNext({ host: "h" })
          yield* TestClock.adjust(MINUTE)

          // Without a status or ids, only dead jobs: a cancelled job stays cancelled.
          expect(yield* retryDead()).toBe(1)
          expect((yield* row(dead.id)).status).toBe("pending")
          expect(yield* discardDead({ name: "fine" })).toBe(0)
          // By id: a job cancelled by mistake runs again.
          expect(yield* retryDead({ ids: [a!.id] })).toBe(1)
          expect(yield* row(a!.id)).toMatchObject({
            status: "pending",
            attempts: 0,
            failedAt: null,
            runAt: T0 + MINUTE
          })
          yield* processNext({ host: "h" })
          yield* processNext({ host: "h" })
          expect((yield* row(a!.id)).status).toBe("completed")
          expect((yield* row(dead.id)).status).toBe("failed")
          expect(yield* discardDead({ ids: [c!.id], status: "failed" })).toBe(0)
          expect(yield* discardDead({ ids: [c!.id] })).toBe(1)
          expect(yield* exists(c!.id)).toBe(false)
          // By status.
          expect(yield* retryDead({ status: "cancelled", olderThan: "2 minutes" })).toBe(0)
          expect(yield* retryDead({ status: "cancelled", olderThan: "1 minute" })).toBe(1)
          expect((yield* row(b!.id)).status).toBe("pending")
        })
      ))

    it.effect("a batch takes at most its limit, longest dead first", () =>
      withJobs(
        [DeadA],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const ids: Array<string> = []
          for (let n = 0; n < 3; n++) {
            ids.push((yield* enqueue(DeadA, { n })).id)
            yield* processNext({ host: "h" })
            yield* TestClock.adjust(SECOND)
          }
          const store = yield* JobStore
          const now = T0 + 3 * SECOND
          const all = { statuses: ["failed", "interrupted"] as const, diedBefore: now }
          expect(yield* store.retryDeadWhere(all, now, 2)).toBe(2)
          expect(yield* Effect.forEach(ids, (id) => Effect.map(row(id), (r) => r.status))).toEqual([
            "pending",
            "pending",
            "failed"
          ])
          // Died after `diedBefore`: not taken.
          expect(yield* store.discardDeadWhere({ ...all, diedBefore: T0 + SECOND }, 10)).toBe(0)
          expect(yield* store.discardDeadWhere(all, 10)).toBe(1)
          expect(yield* exists(ids[2]!)).toBe(false)
        })
      ))
  })
