/**
 * Job-system conformance (docs/behaviour.md §4–§7, §9, §11): enqueue and unique keys, claiming,
 * attempts, retries, reaping, heartbeats and claim fencing. Every adapter must pass all of it.
 * Timing runs under TestClock.
 */
import { expect, layer } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber, Option, Queue, Ref, Schema, TestClock } from "effect"
import { JobLeases, JobStore } from "../../src/JobStore.ts"
import { define, enqueue, heartbeat, JobContext } from "../../src/runtime/Job.ts"
import { processNext, processQueue } from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor, TestDatabase } from "../support/databases.ts"
import { Boom, eventually, gated, Ok, Payload, RunLog, settle, skewed, withJobs } from "../support/jobs.ts"

const T0 = 1_791_039_632_175
const SECOND = 1000

const row = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.getOrThrow))
const countRows = Effect.flatMap(JobStore, (s) => Effect.map(s.counts, (c) => c.reduce((n, x) => n + x.count, 0)))
const withLog = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    Ref.make<ReadonlyArray<{ id: string; n: number; attempt: number }>>([]),
    (log) => Effect.provideService(effect, RunLog, log)
  )
const runLog = Effect.flatMap(RunLog, Ref.get)

export const jobConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "jb"), { timeout: 180_000 })(`Job system conformance on ${adapter}`, (it) => {
    it.effect("enqueue writes a pending row with the type's defaults; processNext completes it", () =>
      withJobs(
        [Ok],
        withLog(Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const result = yield* enqueue(Ok, { n: 1 })
          expect(result).toMatchObject({ status: "pending", duplicate: false })
          const pending = yield* row(result.id)
          expect(pending).toMatchObject({
            name: "ok",
            queue: "default",
            status: "pending",
            attempts: 0,
            maxRetries: 3,
            priority: 0,
            claimTimeout: 300,
            uniqueKey: result.id,
            runAt: T0,
            createdAt: T0
          })
          expect(JSON.parse(pending.payload)).toEqual({ n: 1 })
          const outcome = yield* processNext({ host: "h1" })
          expect(outcome).toMatchObject({
            _tag: "Completed",
            job: { id: result.id, name: "ok", attempt: 1 },
            leaseLost: false
          })
          expect(yield* row(result.id)).toMatchObject({
            status: "completed",
            attempts: 1,
            completedAt: T0,
            claimedBy: "h1"
          })
          expect(yield* runLog).toEqual([{ id: result.id, n: 1, attempt: 1 }])
          expect(yield* processNext({ host: "h1" })).toMatchObject({ _tag: "Idle" })
        }))
      ))

    it.effect("unique keys: same key twice → one row, the second reports duplicate with the first id", () =>
      withJobs(
        [Ok],
        Effect.gen(function*() {
          const a = yield* enqueue(Ok, { n: 1 }, { uniqueKey: "report:2026-12-03" })
          const b = yield* enqueue(Ok, { n: 2 }, { uniqueKey: "report:2026-12-03" })
          expect(b).toEqual({ id: a.id, status: "duplicate", duplicate: true })
          expect(yield* countRows).toBe(1)
          // no key → separate rows
          const c = yield* enqueue(Ok, { n: 3 })
          const d = yield* enqueue(Ok, { n: 3 })
          expect(c.id).not.toBe(d.id)
          expect(yield* countRows).toBe(3)
        })
      ))

    it.effect("unique keys: a race of enqueuers with one key ends with one row; the losers report duplicate", () =>
      withJobs(
        [Ok],
        Effect.gen(function*() {
          const results = yield* Effect.all(
            Array.from({ length: 10 }, (_, n) => enqueue(Ok, { n }, { uniqueKey: "race" })),
            { concurrency: "unbounded" }
          )
          expect(results.filter((r) => !r.duplicate)).toHaveLength(1)
          const winner = results.find((r) => !r.duplicate)!
          expect(results.every((r) => r.id === winner.id)).toBe(true)
          expect(yield* countRows).toBe(1)
        })
      ))

    it.effect("unique keys: delayed enqueues dedupe too, and a key stays taken after completion", () =>
      withJobs(
        [Ok],
        withLog(Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const a = yield* enqueue(Ok, { n: 1 }, { uniqueKey: "k", delay: "1 hour" })
          expect((yield* row(a.id)).runAt).toBe(T0 + 3_600_000)
          expect(yield* enqueue(Ok, { n: 2 }, { uniqueKey: "k", delay: "2 hours" })).toMatchObject({
            id: a.id,
            duplicate: true
          })
          yield* TestClock.adjust("1 hour")
          expect(yield* processNext({ host: "h" })).toMatchObject({ _tag: "Completed" })
          expect(yield* enqueue(Ok, { n: 3 }, { uniqueKey: "k" })).toMatchObject({
            id: a.id,
            duplicate: true,
            status: "duplicate"
          })
        }))
      ))

    it.effect("a 256-character unique key, a bad payload or a bad option fails with a typed error and writes nothing", () =>
      withJobs(
        [Ok],
        Effect.gen(function*() {
          const long = yield* Effect.flip(enqueue(Ok, { n: 1 }, { uniqueKey: "k".repeat(256) }))
          expect(long).toMatchObject({ _tag: "EnqueueInputError", field: "uniqueKey" })
          const bad = yield* Effect.flip(enqueue(Ok, { n: "nope" } as unknown as { n: number }))
          expect(bad._tag).toBe("PayloadError")
          expect(bad.message).toContain("ok")
          for (const delay of [Number.NaN, -5, Number.POSITIVE_INFINITY]) {
            expect(yield* Effect.flip(enqueue(Ok, { n: 1 }, { delay }))).toMatchObject({
              _tag: "EnqueueInputError",
              field: "delay"
            })
          }
          expect(yield* Effect.flip(enqueue(Ok, { n: 1 }, { runAt: Number.NaN }))).toMatchObject({ field: "runAt" })
          expect(yield* Effect.flip(enqueue(Ok, { n: 1 }, { priority: 1.5 }))).toMatchObject({ field: "priority" })
          expect(yield* Effect.flip(enqueue(Ok, { n: 1 }, { uniqueKey: "k " }))).toMatchObject({ field: "uniqueKey" })
          expect(yield* countRows).toBe(0)
          // exactly 255 fits, with quotes and SQL in it
          const key = ("'; DROP TABLE jobs; -- ü\\").padEnd(255, "x")
          const ok = yield* enqueue(Ok, { n: 1 }, { uniqueKey: key })
          expect((yield* row(ok.id)).uniqueKey).toBe(key)
        })
      ))

    it.effect("enqueue inside the caller's transaction joins it: rolled back with it, kept when it commits", () =>
      withJobs(
        [Ok],
        Effect.gen(function*() {
          const db = yield* TestDatabase
          const failed = yield* db.withTransaction(Effect.gen(function*() {
            yield* enqueue(Ok, { n: 1 }, { uniqueKey: "tx-rolled-back" })
            return yield* Effect.fail("app error" as const)
          })).pipe(Effect.flip)
          expect(failed).toBe("app error")
          expect(yield* countRows).toBe(0)
          const committed = yield* db.withTransaction(enqueue(Ok, { n: 2 }, { uniqueKey: "tx-committed" }))
          expect((yield* row(committed.id)).status).toBe("pending")
        })
      ))

    it.effect("claims by priority, then run_at; skips jobs not yet due and other queues", () =>
      withJobs(
        [Ok],
        withLog(Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          yield* enqueue(Ok, { n: 1 })
          yield* TestClock.adjust(1)
          yield* enqueue(Ok, { n: 2 }, { priority: 5 })
          yield* enqueue(Ok, { n: 3 }, { priority: 9, delay: "1 minute" })
          yield* enqueue(Ok, { n: 4 }, { priority: 9, queue: "other" })
          yield* enqueue(Ok, { n: 5 }, { runAt: T0 - 10 })
          const tally = yield* processQueue({ queue: "default", limit: 0 })
          expect(tally).toMatchObject({ processed: 3, failed: 0, skipped: 0, fenced: 0, leasesLost: 0 })
          expect((yield* runLog).map((r) => r.n)).toEqual([2, 5, 1])
          yield* processQueue({ limit: 0, queue: "other" })
          yield* TestClock.adjust("1 minute")
          yield* processQueue({ limit: 0 })
          expect((yield* runLog).map((r) => r.n)).toEqual([2, 5, 1, 4, 3])
        }))
      ))

    it.effect("a batch claim takes up to its limit, best first, each with its own token; a give-back undoes a claim", () =>
      withJobs(
        [Ok],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const store = yield* JobStore
          const low = yield* enqueue(Ok, { n: 1 })
          const high = yield* enqueue(Ok, { n: 2 }, { priority: 5 })
          const early = yield* enqueue(Ok, { n: 3 }, { runAt: T0 - 10 })
          const later = yield* enqueue(Ok, { n: 4 }, { priority: 9, delay: "1 minute" })
          const other = yield* enqueue(Ok, { n: 5 }, { priority: 9, queue: "other" })
          const input = {
            queues: ["default"],
            host: "h",
            now: T0,
            claimToken: "batch-1",
            timeoutCap: undefined,
            hostCap: undefined
          }
          const claimed = yield* store.claimMany(input, 2)
          expect(claimed.map((r) => r.id)).toEqual([high.id, early.id])
          expect(new Set(claimed.map((r) => r.claimToken)).size).toBe(2)
          for (const r of claimed) {
            expect(yield* row(r.id)).toMatchObject({
              status: "processing",
              attempts: 1,
              claimedBy: "h",
              claimToken: r.claimToken
            })
          }
          const rest = yield* store.claimMany({ ...input, claimToken: "batch-2" }, 10)
          expect(rest.map((r) => r.id)).toEqual([low.id])
          expect(yield* store.claimMany({ ...input, claimToken: "batch-3" }, 10)).toEqual([])
          expect((yield* row(later.id)).status).toBe("pending")
          expect((yield* row(other.id)).status).toBe("pending")
          // A give-back is fenced on the token, and leaves the row as it was before the claim.
          const taken = claimed[0]!
          expect(yield* store.giveBack(taken.id, "someone-else", T0 + 1)).toBe(false)
          expect(yield* store.giveBack(taken.id, taken.claimToken!, T0 + 1)).toBe(true)
          expect(yield* row(taken.id)).toMatchObject({
            status: "pending",
            attempts: 0,
            claimToken: null,
            staleAt: null,
            runAt: (yield* row(high.id)).runAt
          })
          expect(yield* store.giveBack(taken.id, taken.claimToken!, T0 + 2)).toBe(false)
          expect((yield* store.claimMany({ ...input, claimToken: "batch-4" }, 1)).map((r) => r.id)).toEqual([high.id])
        })
      ))

    it.effect("failure retries with exponential backoff (4 s, 8 s), and the job is dead after maxRetries + 1 runs", () =>
      withJobs(
        [Boom],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const { id } = yield* enqueue(Boom, { n: 7 })
          const first = yield* processNext({ host: "h" })
          expect(first).toMatchObject({ _tag: "Failed", willRetry: true, retryAt: T0 + 4 * SECOND })
          expect(yield* row(id)).toMatchObject({
            status: "pending",
            attempts: 1,
            claimToken: null,
            runAt: T0 + 4 * SECOND
          })
          expect((yield* row(id)).lastError).toContain("boom 7")
          expect(yield* processNext({ host: "h" })).toMatchObject({ _tag: "Idle" })
          yield* TestClock.adjust(4 * SECOND)
          expect(yield* processNext({ host: "h" })).toMatchObject({
            _tag: "Failed",
            willRetry: true,
            retryAt: T0 + 12 * SECOND
          })
          yield* TestClock.adjust(8 * SECOND)
          expect(yield* processNext({ host: "h" })).toMatchObject({ _tag: "Failed", willRetry: false, retryAt: null })
          expect(yield* row(id)).toMatchObject({ status: "failed", attempts: 3, failedAt: T0 + 12 * SECOND })
          yield* TestClock.adjust("1 day")
          expect(yield* processNext({ host: "h" })).toMatchObject({ _tag: "Idle" })
        })
      ))

    it.effect("linear backoff is a real option", () => {
      const Linear = define({
        name: "linear",
        schema: Payload,
        backoff: { kind: "linear", baseSeconds: 5 },
        perform: () => Effect.fail("no")
      })
      return withJobs(
        [Linear],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          yield* enqueue(Linear, { n: 1 })
          expect(yield* processNext()).toMatchObject({ retryAt: T0 + 5 * SECOND })
          yield* TestClock.adjust(5 * SECOND)
          expect(yield* processNext()).toMatchObject({ retryAt: T0 + 15 * SECOND })
        })
      )
    })

    it.effect("perform runs under its timeout; a timed-out attempt fails with a timeout error and is retried", () =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const started = yield* Deferred.make<void>()
        const Slow = gated("slow", gate, { timeout: "10 seconds", started })
        yield* withJobs(
          [Slow],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { id } = yield* enqueue(Slow, { n: 1 })
            const fiber = yield* Effect.fork(processNext({ host: "h" }))
            yield* Deferred.await(started)
            yield* settle
            yield* TestClock.adjust(10 * SECOND)
            const outcome = yield* Fiber.join(fiber)
            expect(outcome).toMatchObject({ _tag: "Failed", willRetry: true })
            if (outcome._tag === "Failed") expect(outcome.error).toContain("timed out after 10 s")
            expect(yield* row(id)).toMatchObject({ status: "pending", attempts: 1, claimTimeout: 10 })
          })
        )
      }))

    it.effect("the worker's timeout cap bounds a job type's timeout", () =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const started = yield* Deferred.make<void>()
        const Slow = gated("slow", gate, { started })
        yield* withJobs(
          [Slow],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { id } = yield* enqueue(Slow, { n: 1 })
            const fiber = yield* Effect.fork(processNext({ host: "h", timeoutCap: "3 seconds" }))
            yield* Deferred.await(started)
            yield* settle
            yield* TestClock.adjust(3 * SECOND)
            expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Failed" })
            expect((yield* row(id)).claimTimeout).toBe(3)
          })
        )
      }))

    it.effect("a payload that no longer decodes, or a name with no registered type, fails the attempt and the worker goes on", () =>
      withJobs(
        [Ok],
        withLog(Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const store = yield* JobStore
          const Stranger = define({ name: "stranger; DROP TABLE x; --", schema: Payload, perform: () => Effect.void })
          const Changed = define({
            name: "ok",
            schema: Schema.Struct({ n: Schema.Number }),
            perform: () => Effect.void
          })
          // rows written by another version of the app
          const unknown = yield* Effect.provideService(enqueue(Stranger, { n: 1 }, { priority: 3 }), JobStore, store)
          const bad = yield* enqueue(Changed, { n: 2 }, { priority: 2 })
          yield* store.insert({
            id: crypto.randomUUID(),
            name: "ok",
            queue: "default",
            payload: "{not json",
            priority: 1,
            maxRetries: 0,
            claimTimeout: 60,
            uniqueKey: "garbled",
            runAt: T0,
            now: T0
          })
          yield* Effect.sync(() => undefined)
          const a = yield* processNext({ host: "h" })
          expect(a).toMatchObject({ _tag: "Failed", job: { id: unknown.id } })
          if (a._tag === "Failed") expect(a.error).toContain("UnknownJobTypeError")
          // Changed encodes the same shape, so it decodes: run it; then the garbled row fails.
          expect(yield* processNext({ host: "h" })).toMatchObject({ _tag: "Completed", job: { id: bad.id } })
          const garbled = yield* processNext({ host: "h" })
          expect(garbled).toMatchObject({ _tag: "Failed", willRetry: false })
          if (garbled._tag === "Failed") expect(garbled.error).toContain("no longer decodes")
        }))
      ))

    it.effect("every claim writes a fresh token and clears an old heartbeat; the reaper clears the token", () =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const Beat = gated("beat", gate, { beat: true })
        yield* withJobs(
          [Beat],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { id } = yield* enqueue(Beat, { n: 1 })
            const first = yield* Effect.fork(processNext({ host: "a" }))
            yield* eventually(Effect.map(row(id), (r) => r.heartbeatAt !== null))
            const claimed = yield* row(id)
            expect(claimed).toMatchObject({ status: "processing", claimedBy: "a", attempts: 1 })
            expect(claimed.heartbeatAt).not.toBeNull()
            // worker a vanishes; a skewed clock far ahead sees the row stale: reaped, token cleared
            const grace = (300 + 300) * SECOND
            expect(yield* skewed(grace + 1000, processNext({ host: "b" }))).toMatchObject({ _tag: "Idle" })
            const reaped = yield* row(id)
            expect(reaped).toMatchObject({ status: "pending", claimToken: null, attempts: 1 })
            // a later claim writes a new token and no heartbeat
            const second = yield* Effect.fork(skewed(grace + 10_000, processNext({ host: "b" })))
            yield* eventually(Effect.map(row(id), (r) => r.claimedBy === "b" && r.heartbeatAt !== null))
            const reclaimed = yield* row(id)
            expect(reclaimed.claimToken).not.toBeNull()
            expect(reclaimed.claimToken).not.toBe(claimed.claimToken)
            // its heartbeat is its own (the claim cleared the old one)
            expect(reclaimed.heartbeatAt).toBe(T0 + grace + 10_000)
            expect(reclaimed).toMatchObject({ status: "processing", claimedBy: "b", attempts: 2 })
            yield* Deferred.succeed(gate, undefined)
            // the first attempt's completion is fenced; the second completes
            expect(yield* Fiber.join(first)).toMatchObject({ _tag: "Fenced", job: { id, attempt: 1 } })
            expect(yield* Fiber.join(second)).toMatchObject({ _tag: "Completed", job: { id, attempt: 2 } })
            expect(yield* row(id)).toMatchObject({ status: "completed", attempts: 2 })
          })
        )
      }))

    it.effect("a reaped attempt's late failure changes nothing and reports fenced; its heartbeat fails Fenced", () =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const seen = yield* Ref.make<ReadonlyArray<string>>([])
        const Late = define({
          name: "late",
          schema: Payload,
          perform: () =>
            Effect.gen(function*() {
              const ctx = yield* JobContext
              if (ctx.attempt === 1) {
                yield* Deferred.await(gate)
                const beat = yield* Effect.either(heartbeat)
                yield* Ref.update(seen, (s) => [...s, beat._tag === "Left" ? beat.left._tag : "ok"])
                return yield* Effect.fail("late failure")
              }
            })
        })
        yield* withJobs(
          [Late],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { id } = yield* enqueue(Late, { n: 1 })
            const first = yield* Effect.fork(processNext({ host: "a" }))
            yield* eventually(Effect.map(row(id), (r) => r.status === "processing"))
            const grace = 600 * SECOND
            yield* skewed(grace + 1000, processNext({ host: "b" }))
            expect(yield* skewed(grace + 10_000, processNext({ host: "b" }))).toMatchObject({
              _tag: "Completed",
              job: { attempt: 2 }
            })
            yield* Deferred.succeed(gate, undefined)
            expect(yield* Fiber.join(first)).toMatchObject({ _tag: "Fenced" })
            expect(yield* Ref.get(seen)).toEqual(["Fenced"])
            expect(yield* row(id)).toMatchObject({
              status: "completed",
              attempts: 2,
              lastError: expect.stringContaining("reaped")
            })
          })
        )
      }))

    it.effect("a job that keeps heartbeating is never reaped, however old its claim", () =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        // perform says when it is about to sleep, so the test moves the clock only then
        const sleeping = yield* Queue.unbounded<number>()
        const Beating = define({
          name: "beating",
          schema: Payload,
          timeout: "1 hour",
          perform: () =>
            Effect.gen(function*() {
              for (let i = 0; i < 30; i++) {
                yield* Queue.offer(sleeping, i)
                yield* Effect.sleep("1 minute")
                yield* heartbeat
              }
              yield* Deferred.await(gate)
            })
        })
        const Silent = gated("silent", gate, { timeout: "1 hour" })
        yield* withJobs(
          [Beating, Silent],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const beating = yield* enqueue(Beating, { n: 1 })
            const silent = yield* enqueue(Silent, { n: 2 })
            const a = yield* Effect.fork(processNext({ host: "a" }))
            const b = yield* Effect.fork(processNext({ host: "a" }))
            yield* eventually(Effect.map(Effect.all([row(beating.id), row(silent.id)]), (rs) =>
              rs.every((r) =>
                r.status === "processing"
              )))
            for (let i = 1; i <= 30; i++) {
              yield* Queue.take(sleeping)
              yield* settle
              yield* TestClock.adjust("1 minute")
            }
            yield* eventually(Effect.map(row(beating.id), (r) =>
              r.heartbeatAt === T0 + 30 * 60_000))
            // Another host, its clock 1 h 45 min ahead, reaps: claims 2 h 15 min old by its clock,
            // past the 2 h grace. Only the silent one is stale; the heartbeating one is not.
            yield* skewed(105 * 60_000, processNext({ host: "b" }))
            expect(yield* row(silent.id)).toMatchObject({ status: "pending", claimToken: null })
            expect(yield* row(beating.id)).toMatchObject({ status: "processing", claimedBy: "a" })
            yield* Deferred.succeed(gate, undefined)
            const outcomes = [yield* Fiber.join(a), yield* Fiber.join(b)].map((o) => o._tag).sort()
            expect(outcomes).toEqual(["Completed", "Fenced"])
            expect((yield* row(beating.id)).status).toBe("completed")
          })
        )
      }))

    it.effect("reaped: a non-idempotent job is interrupted with attempts unchanged; an idempotent one goes back to pending", () =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const Once = gated("once", gate, { idempotent: false })
        const Again = gated("again", gate)
        yield* withJobs(
          [Once, Again],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const once = yield* enqueue(Once, { n: 1 })
            const again = yield* enqueue(Again, { n: 2 })
            yield* Effect.fork(processNext({ host: "a" }))
            yield* Effect.fork(processNext({ host: "a" }))
            yield* eventually(
              Effect.map(Effect.all([row(once.id), row(again.id)]), (rs) => rs.every((r) => r.status === "processing"))
            )
            expect((yield* row(once.id)).status).toBe("processing")
            expect((yield* row(again.id)).status).toBe("processing")
            yield* skewed(601 * SECOND, processNext({ host: "b" }))
            const interrupted = yield* row(once.id)
            expect(interrupted).toMatchObject({ status: "interrupted", attempts: 1, claimToken: null })
            expect(interrupted.lastError).toContain("not idempotent")
            const retried = yield* row(again.id)
            expect(retried).toMatchObject({ status: "pending", attempts: 1, claimToken: null })
            // Each reaped attempt is in its job's history, ended when the reaper found it
            // (docs/behaviour.md §12).
            const reaped = { attempt: 1, startedAt: T0, endedAt: T0 + 601 * SECOND, host: "a" }
            expect(interrupted.history).toEqual([
              { ...reaped, outcome: "interrupted", error: interrupted.lastError }
            ])
            expect(retried.history).toEqual([{ ...reaped, outcome: "failed", error: retried.lastError }])
            expect(retried.lastError).toContain("reaped")
          })
        )
      }))

    it.effect("heartbeat outside a worker does nothing: it succeeds with no value, and no row or lease changes", () =>
      Effect.gen(function*() {
        // with no worker services at all
        expect(yield* Effect.either(heartbeat)).toEqual(Either.right(undefined))
        const gate = yield* Deferred.make<void>()
        const started = yield* Deferred.make<void>()
        const Held = define({
          name: "held",
          schema: Payload,
          exclusive: true,
          perform: () => Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(gate))
        })
        yield* withJobs(
          [Held],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { id } = yield* enqueue(Held, { n: 1 })
            const attempt = yield* Effect.fork(processNext({ host: "h" }))
            yield* Deferred.await(started)
            const lease = Effect.flatMap(JobLeases, (l) => l.read("job:held"))
            const before = { row: yield* row(id), lease: yield* lease }
            expect(before.row).toMatchObject({ status: "processing", heartbeatAt: null })
            expect(Option.map(before.lease, (l) => l.expiresAt)).toEqual(Option.some(T0 + 600 * SECOND))
            // a heartbeat now, were it an attempt's, would write heartbeat_at and move the lease
            yield* TestClock.adjust("1 minute")
            expect(yield* Effect.either(heartbeat)).toEqual(Either.right(undefined))
            expect({ row: yield* row(id), lease: yield* lease }).toEqual(before)
            yield* Deferred.succeed(gate, undefined)
            expect(yield* Fiber.join(attempt)).toMatchObject({ _tag: "Completed", job: { id } })
          })
        )
      }))

    it.effect("processQueue stops at its limit, counts failures, and returns the errors", () =>
      withJobs(
        [Ok, Boom],
        withLog(Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          for (let n = 0; n < 5; n++) yield* enqueue(Ok, { n })
          yield* enqueue(Boom, { n: 99 }, { priority: 10 })
          const first = yield* processQueue({ limit: 3 })
          expect(first).toMatchObject({ processed: 2, failed: 1, skipped: 0, fenced: 0 })
          expect(first.errors).toEqual([expect.stringContaining("boom 99")])
          expect(yield* processQueue({ limit: 0 })).toMatchObject({ processed: 3, failed: 0 })
        }))
      ))

    it.effect("concurrent workers drain the queue and every job runs exactly once", () =>
      withJobs(
        [Ok],
        withLog(Effect.gen(function*() {
          // Galera: 2,000 jobs, claims spread over three nodes that certify each other's commits.
          // The most work of any test here: on a loaded 2-core machine it needs more than 60 s.
          const total = adapter === "galera" ? 2000 : adapter === "postgres" || adapter === "mysql" ? 1000 : 400
          const store = yield* JobStore
          yield* TestClock.setTime(T0)
          // setup: the rows go in several at a time (their order does not matter: all are due at T0)
          yield* Effect.forEach(
            Array.from({ length: total }, (_, n) => n),
            (n) =>
              store.insert({
                id: crypto.randomUUID(),
                name: "ok",
                queue: "default",
                payload: JSON.stringify({ n }),
                priority: n % 3,
                maxRetries: 3,
                claimTimeout: 300,
                uniqueKey: `u${n}`,
                runAt: T0,
                now: T0
              }),
            { concurrency: 8, discard: true }
          )
          const tallies = yield* Effect.all(
            Array.from({ length: 8 }, (_, w) => processQueue({ host: `w${w}`, limit: 0 })),
            { concurrency: "unbounded" }
          )
          expect(tallies.reduce((n, t) => n + t.processed, 0)).toBe(total)
          const log = yield* runLog
          expect(log).toHaveLength(total)
          expect(new Set(log.map((r) => r.id)).size).toBe(total)
          expect(new Set(log.map((r) => r.n)).size).toBe(total)
          expect((yield* store.counts).filter((c) => c.status !== "completed")).toEqual([])
        }))
      ), 240_000)
  })
