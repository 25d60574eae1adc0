/**
 * A busy key inside one long-running worker (src/runtime/worker/keyGate.ts, docs/behaviour.md
 * §9) on every adapter: the next job of a key this worker is running waits for that run and
 * starts right after it, with the lease passed to it, without a deferral; further jobs of the
 * key are not claimed meanwhile (src/runtime/worker/keyClaims.ts), unless better than the
 * waiting one, which then defers; a waiter passed the lease that does not run gives it back and
 * wakes the key's next waiter.
 */
import { expect, layer } from "@effect/vitest"
import { Deferred, type Duration, Effect, Exit, Fiber, Option, Ref, Scope, TestClock } from "effect"
import { JobLeases, JobStore } from "../../src/JobStore.ts"
import { cancel } from "../../src/runtime/cancel.ts"
import { define, enqueue } from "../../src/runtime/Job.ts"
import { GATE_WAIT_MS } from "../../src/runtime/worker/keyGate.ts"
import { RECHECK_AFTER_MS } from "../../src/runtime/worker/longRunning.ts"
import type { ProcessResult } from "../../src/runtime/worker/results.ts"
import { type AdapterName, layerFor } from "../support/databases.ts"
import { eventually, Payload, settle, withJobs } from "../support/jobs.ts"
import { startWorker } from "./worker.ts"

const T0 = 1_791_039_632_175

const row = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.getOrThrow))

/**
 * Jobs of one key whose perform records its start and end in `log` and waits on the gate its
 * payload names (`gates[n]`), so the test decides when each run ends.
 */
const keyedJobs = (
  key: string,
  gates: ReadonlyArray<Deferred.Deferred<void>>,
  log: Ref.Ref<ReadonlyArray<string>>,
  limit = 1
) =>
  define({
    name: `gate-${key}`,
    schema: Payload,
    concurrencyKey: key,
    concurrencyLimit: limit,
    perform: ({ n }) =>
      Effect.gen(function*() {
        yield* Ref.update(log, (l) => [...l, `start ${n}`])
        yield* Deferred.await(gates[n]!)
        yield* Ref.update(log, (l) => [...l, `end ${n}`])
      })
  })

/**
 * `count` jobs of key `key` (job n at priority count − 1 − n, so they are claimed in order;
 * the first `enqueued` of them enqueued up front; `limit` runs of the key at once), each waiting
 * on its own gate, and a worker of `concurrency` fibers (default `count`, grace period
 * `gracePeriod`) whose results are kept; the worker is stopped (its gates opened) when `body`
 * ends either way, unless `body` stopped it (`scope`).
 */
const scenario = <A, E, R>(
  key: string,
  count: number,
  body: (s: {
    readonly ids: ReadonlyArray<string>
    readonly gates: ReadonlyArray<Deferred.Deferred<void>>
    readonly log: Ref.Ref<ReadonlyArray<string>>
    readonly results: Ref.Ref<ReadonlyArray<ProcessResult>>
    readonly Job: ReturnType<typeof keyedJobs>
    readonly scope: Scope.CloseableScope
  }) => Effect.Effect<A, E, R>,
  { concurrency = count, enqueued = count, limit = 1, gracePeriod = "30 seconds" }: {
    readonly concurrency?: number
    readonly enqueued?: number
    readonly limit?: number
    readonly gracePeriod?: Duration.DurationInput
  } = {}
) =>
  Effect.gen(function*() {
    const gates = yield* Effect.forEach(Array.from({ length: count }), () => Deferred.make<void>())
    const log = yield* Ref.make<ReadonlyArray<string>>([])
    const Job = keyedJobs(key, gates, log, limit)
    return yield* withJobs(
      [Job],
      Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        const ids = yield* Effect.forEach(
          gates.slice(0, enqueued),
          (_, n) => Effect.map(enqueue(Job, { n }, { priority: count - 1 - n }), (j) => j.id)
        )
        const results = yield* Ref.make<ReadonlyArray<ProcessResult>>([])
        const { scope } = yield* startWorker({
          host: "kg",
          concurrency,
          gracePeriod,
          pollInterval: "1 hour",
          onResult: (r) => Ref.update(results, (l) => [...l, r])
        })
        return yield* body({ ids, gates, log, results, Job, scope }).pipe(
          Effect.ensuring(Effect.gen(function*() {
            for (const g of gates) yield* Deferred.succeed(g, undefined)
            yield* Effect.forkDaemon(Scope.close(scope, Exit.void))
          }))
        )
      })
    )
  })

const tags = (results: Ref.Ref<ReadonlyArray<ProcessResult>>) =>
  Effect.map(Ref.get(results), (l) => l.map((r) => r._tag))

export const keyGateConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "kg"), { timeout: 180_000 })(`Busy key in one worker, on ${adapter}`, (it) => {
    it.effect("the next job of a key the worker runs waits for that run, not deferred, and starts when it ends", () =>
      scenario("next", 2, ({ gates, ids: [first, second], log, results }) =>
        Effect.gen(function*() {
          yield* eventually(Effect.map(Ref.get(log), (l) => l.length === 1))
          expect(yield* Ref.get(log)).toEqual(["start 0"])
          // Claimed and waiting in the worker: still processing, no deferral written.
          yield* eventually(Effect.map(row(second!), (r) => r.status === "processing"))
          yield* settle
          expect(yield* row(second!)).toMatchObject({ status: "processing", attempts: 1, leaseName: null })
          expect(yield* Ref.get(log)).toEqual(["start 0"])

          yield* Deferred.succeed(gates[0]!, undefined)
          yield* eventually(Effect.map(Ref.get(log), (l) => l.length === 3))
          expect(yield* Ref.get(log)).toEqual(["start 0", "end 0", "start 1"])
          yield* Deferred.succeed(gates[1]!, undefined)
          yield* eventually(Effect.map(Ref.get(results), (l) => l.length === 2))
          expect(yield* tags(results)).toEqual(["Completed", "Completed"])
          expect(yield* row(first!)).toMatchObject({ status: "completed", attempts: 1 })
          expect(yield* row(second!)).toMatchObject({ status: "completed", attempts: 1 })
        })))

    it.effect("a third job of the busy key is not claimed while two of its jobs are, and runs after the second", () =>
      scenario("third", 3, ({ gates, ids: [, second, third], log, results }) =>
        Effect.gen(function*() {
          yield* eventually(Effect.map(Ref.get(log), (l) => l.length === 1))
          yield* eventually(Effect.map(row(second!), (r) => r.status === "processing"))
          yield* settle
          // Job 0 runs and job 1 waits in the worker: the claim skips the key's other jobs
          // (src/runtime/worker/keyClaims.ts), so job 2 is neither claimed nor deferred.
          expect(yield* row(third!)).toMatchObject({ status: "pending", attempts: 0, leaseName: null, runAt: T0 })
          expect(yield* Ref.get(log)).toEqual(["start 0"])

          // Job 1 takes over from job 0; job 2 is claimed meanwhile and waits for it.
          yield* Deferred.succeed(gates[0]!, undefined)
          yield* eventually(Effect.map(Ref.get(log), (l) => l.length === 3))
          yield* eventually(Effect.map(row(third!), (r) => r.status === "processing"))
          yield* settle
          expect(yield* Ref.get(log)).toEqual(["start 0", "end 0", "start 1"])
          expect(yield* row(third!)).toMatchObject({ attempts: 1, leaseName: null })
          yield* Deferred.succeed(gates[1]!, undefined)
          yield* eventually(Effect.map(Ref.get(log), (l) => l.length === 5))
          expect(yield* Ref.get(log)).toEqual(["start 0", "end 0", "start 1", "end 1", "start 2"])
          yield* Deferred.succeed(gates[2]!, undefined)
          yield* eventually(Effect.map(Ref.get(results), (l) => l.length === 3))
          expect(yield* tags(results)).toEqual(["Completed", "Completed", "Completed"])
          // Each ran once, on its first claim: nothing was deferred.
          for (const id of [second!, third!]) expect(yield* row(id)).toMatchObject({ status: "completed", attempts: 1 })
        })))

    it.effect("a waiter whose key stays busy past GATE_WAIT_MS stops waiting: it finds the lease busy, defers, and runs after the hand-off", () =>
      scenario("late", 2, ({ gates, ids: [, second], log, results }) =>
        Effect.gen(function*() {
          yield* eventually(Effect.map(Ref.get(log), (l) => l.length === 1))
          yield* eventually(Effect.map(row(second!), (r) => r.status === "processing"))
          yield* settle
          // Still waiting just before GATE_WAIT_MS (the worker's timer may end a wait up to its
          // 250 ms step late, never early).
          yield* TestClock.adjust(GATE_WAIT_MS - 10)
          yield* settle
          expect(yield* row(second!)).toMatchObject({ status: "processing", leaseName: null })
          yield* TestClock.adjust(260)
          yield* eventually(Effect.map(row(second!), (r) => r.status === "pending" && r.leaseName === "key:late"))
          yield* eventually(Effect.map(Ref.get(results), (l) => l.length === 1))
          expect(yield* tags(results)).toEqual(["Deferred"])
          // The holder's end hands the lease off to it in the database.
          yield* Deferred.succeed(gates[0]!, undefined)
          yield* eventually(Effect.map(Ref.get(log), (l) => l.includes("start 1")))
          expect(yield* Ref.get(log)).toEqual(["start 0", "end 0", "start 1"])
          yield* Deferred.succeed(gates[1]!, undefined)
          yield* eventually(Effect.map(Ref.get(results), (l) => l.length === 3))
          expect(yield* tags(results)).toEqual(["Deferred", "Completed", "Completed"])
        })))

    it.effect("a better job (by priority) takes the place of a waiting one, which defers; both still run, the better first", () =>
      scenario("better", 3, ({ Job, gates, ids: [, worse], log, results }) =>
        Effect.gen(function*() {
          yield* eventually(Effect.map(row(worse!), (r) => r.status === "processing"))
          yield* settle
          const better = yield* enqueue(Job, { n: 2 }, { priority: 5 })
          // The worse waiter gives way: deferred, waiting on the key in the database.
          yield* eventually(Effect.map(row(worse!), (r) => r.status === "pending" && r.leaseName !== null))
          expect(yield* row(better.id)).toMatchObject({ status: "processing" })
          yield* Deferred.succeed(gates[0]!, undefined)
          yield* eventually(Effect.map(Ref.get(log), (l) => l.length === 3))
          expect(yield* Ref.get(log)).toEqual(["start 0", "end 0", "start 2"])
          yield* Deferred.succeed(gates[2]!, undefined)
          yield* eventually(Effect.map(Ref.get(log), (l) => l.length === 5))
          expect(yield* Ref.get(log)).toEqual(["start 0", "end 0", "start 2", "end 2", "start 1"])
          yield* Deferred.succeed(gates[1]!, undefined)
          yield* eventually(Effect.map(Ref.get(results), (l) => l.length === 4))
          expect(yield* tags(results)).toEqual(["Deferred", "Completed", "Completed", "Completed"])
        }), { enqueued: 2 }))

    it.effect("a waiter passed the lease that does not run (cancelled while it waited) gives it back and wakes the key's next waiter", () =>
      scenario("promised", 3, ({ Job, gates, ids: [, worse], log, results }) =>
        Effect.gen(function*() {
          yield* eventually(Effect.map(row(worse!), (r) => r.status === "processing"))
          yield* settle
          // A better job takes the waiting one's place, which defers: a waiter in the database.
          const better = yield* enqueue(Job, { n: 2 }, { priority: 5 })
          yield* eventually(Effect.map(row(worse!), (r) => r.status === "pending" && r.leaseName !== null))
          yield* eventually(Effect.map(row(better.id), (r) => r.status === "processing"))
          yield* cancel(better.id)
          // Long enough that the waiter reads its claim again before it starts (and finds it
          // cancelled), not long enough to give up waiting.
          yield* settle
          yield* settle
          expect(RECHECK_AFTER_MS + 10).toBeLessThan(GATE_WAIT_MS)
          yield* TestClock.adjust(RECHECK_AFTER_MS + 10)
          // Job 0's finish passes its lease to the waiter and wakes nobody in the database. The
          // waiter does not run: it gives the lease back and wakes the deferred job.
          yield* Deferred.succeed(gates[0]!, undefined)
          yield* eventually(Effect.map(Ref.get(log), (l) => l.includes("start 1")))
          expect(yield* Ref.get(log)).toEqual(["start 0", "end 0", "start 1"])
          expect(yield* row(better.id)).toMatchObject({ status: "cancelled" })
          yield* eventually(Effect.map(Ref.get(results), (l) => l.some((r) => r._tag === "Cancelled")))
        }), { enqueued: 2 }))

    it.effect("with concurrencyLimit 2, two jobs of the key run at once and a third waits for one of them, not deferred", () =>
      scenario("limit", 3, ({ gates, ids: [, , third], log, results }) =>
        Effect.gen(function*() {
          yield* eventually(Effect.map(Ref.get(log), (l) => l.length === 2))
          expect([...(yield* Ref.get(log))].sort()).toEqual(["start 0", "start 1"])
          yield* eventually(Effect.map(row(third!), (r) => r.status === "processing"))
          yield* settle
          expect(yield* row(third!)).toMatchObject({ status: "processing", attempts: 1, leaseName: null })
          expect(yield* Ref.get(log)).toHaveLength(2)

          yield* Deferred.succeed(gates[1]!, undefined)
          yield* eventually(Effect.map(Ref.get(log), (l) => l.includes("start 2")))
          expect((yield* Ref.get(log)).slice(2)).toEqual(["end 1", "start 2"])
          yield* Deferred.succeed(gates[0]!, undefined)
          yield* Deferred.succeed(gates[2]!, undefined)
          yield* eventually(Effect.map(Ref.get(results), (l) => l.length === 3))
          expect(yield* tags(results)).toEqual(["Completed", "Completed", "Completed"])
        }), { limit: 2 }))

    it.effect("a worker stopping while an attempt waits for its key hands that job back as it was (not deferred), and leaves no lease", () =>
      scenario("stop", 2, ({ ids: [first, second], log, scope }) =>
        Effect.gen(function*() {
          yield* eventually(Effect.map(Ref.get(log), (l) => l.length === 1))
          yield* eventually(Effect.map(row(second!), (r) => r.status === "processing"))
          yield* settle
          const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
          yield* settle
          yield* TestClock.adjust("100 millis")
          yield* Fiber.join(closing)
          const givenBack = { status: "pending", attempts: 0, claimToken: null, runAt: T0, lastError: null }
          expect(yield* row(first!)).toMatchObject(givenBack)
          expect(yield* row(second!)).toMatchObject({ ...givenBack, leaseName: null })
          expect(yield* (yield* JobLeases).ownerOf("key:stop")).toEqual(Option.none())
          expect(yield* Ref.get(log)).toEqual(["start 0"])
        }), { gracePeriod: "100 millis" }))
  })
