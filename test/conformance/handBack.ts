/**
 * A shutdown that hands work back (docs/behaviour.md §9, issue 14 item 6) on every adapter:
 * `JobStore.handBack` on its own, and the long-running worker stopping past its grace period.
 */
import { expect, layer } from "@effect/vitest"
import { Clock, Deferred, Effect, Exit, Fiber, Option, Scope, TestClock } from "effect"
import { JobLeases, JobStore } from "../../src/JobStore.ts"
import { define, enqueue } from "../../src/runtime/Job.ts"
import { GATE_WAIT_MS } from "../../src/runtime/worker/keyGate.ts"
import { type AdapterName, layerFor } from "../support/databases.ts"
import { claimInput, eventually, Ok, Payload, settle, withJobs } from "../support/jobs.ts"
import { startWorker } from "./worker.ts"

const T0 = 1_791_039_632_175
const SECOND = 1000

const row = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.getOrThrow))

/**
 * A job keyed `key` whose perform says which payload started, then waits on `gate`
 * (uninterruptibly with `stubborn`). Each test has a key of its own, so a lease one leaves held
 * cannot defer the next one's job.
 */
const keyed = (
  name: string,
  key: string,
  gate: Deferred.Deferred<void>,
  started: Deferred.Deferred<number>,
  stubborn = false
) =>
  define({
    name,
    schema: Payload,
    concurrencyKey: key,
    perform: ({ n }) =>
      Effect.zipRight(
        Deferred.succeed(started, n),
        stubborn ? Effect.uninterruptible(Deferred.await(gate)) : Deferred.await(gate)
      )
  })

/**
 * Runs `body` against a started worker; if `body` fails, opens `gate` and stops the worker (in
 * the background: its stop may wait on the TestClock), so a failed test leaves no worker behind
 * to claim the next test's jobs from the shared tables.
 */
const stoppedOnFailure = <A, E, R>(
  scope: Scope.CloseableScope,
  gate: Deferred.Deferred<void>,
  body: Effect.Effect<A, E, R>
) =>
  Effect.onExit(body, (exit) =>
    Exit.isSuccess(exit)
      ? Effect.void
      : Effect.asVoid(
        Effect.forkDaemon(Effect.zipRight(Deferred.succeed(gate, undefined), Scope.close(scope, Exit.void)))
      ))

export const handBackConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "hb"), { timeout: 180_000 })(`Hand-back conformance on ${adapter}`, (it) => {
    it.effect("handBack: attempts pending again with their attempt given back, leases released, each handed off to its best waiter", () =>
      withJobs(
        [Ok],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const store = yield* JobStore
          const leases = yield* JobLeases
          yield* leases.ensureTable
          // A (which itself waited on k1 before), and waiters on k1 and k2, deferred.
          const a = yield* enqueue(Ok, { n: 1 }, { priority: 5 })
          const w1 = yield* enqueue(Ok, { n: 2 }, { priority: 1 })
          const w1b = yield* enqueue(Ok, { n: 3 })
          const w2 = yield* enqueue(Ok, { n: 4 })
          const first = yield* store.claimMany(claimInput(T0, "first"), 4)
          const ids = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((r) => r.id).sort()
          expect(ids(first)).toEqual(ids([a, w1, w1b, w2]))
          const tokenOf = (id: string) => first.find((r) => r.id === id)!.claimToken!
          expect(yield* store.defer(a.id, tokenOf(a.id), T0, T0 + 5 * SECOND, "key:k1")).toBe(true)
          for (const w of [w1, w1b]) {
            expect(yield* store.defer(w.id, tokenOf(w.id), T0, T0 + 60 * SECOND, "key:k1")).toBe(true)
          }
          expect(yield* store.defer(w2.id, tokenOf(w2.id), T0, T0 + 60 * SECOND, "key:k2")).toBe(true)

          // Later: A, B (holding k2) and C (no lease) are running.
          const t1 = T0 + 5 * SECOND
          const b = yield* enqueue(Ok, { n: 5 }, { runAt: T0 })
          const c = yield* enqueue(Ok, { n: 6 }, { runAt: T0 })
          const running = yield* store.claimMany(claimInput(t1, "second"), 10)
          expect(ids(running)).toEqual(ids([a, b, c]))
          const [ra, rb, rc] = [a, b, c].map((j) => running.find((r) => r.id === j.id)!)
          if (ra === undefined || rb === undefined || rc === undefined) return expect.unreachable()
          expect(yield* leases.tryAcquire({ name: "key:k1", owner: ra.claimToken!, now: t1, ttlMs: 600_000 })).toBe(
            true
          )
          expect(yield* leases.tryAcquire({ name: "key:k2", owner: rb.claimToken!, now: t1, ttlMs: 600_000 })).toBe(
            true
          )
          yield* leases.tryAcquire({ name: "key:k3", owner: "someone-else", now: t1, ttlMs: 600_000 })

          const t2 = t1 + SECOND
          const claims = running.map((r) => ({ id: r.id, token: r.claimToken! }))
          // A claim that is not ours (wrong token) changes nothing.
          expect(yield* store.handBack([{ id: c.id, token: "not-its-token" }], t2)).toEqual({
            handedBack: 0,
            released: 0,
            woke: 0
          })
          expect(yield* store.handBack(claims, t2)).toEqual({ handedBack: 3, released: 2, woke: 2 })

          for (const r of [ra, rb, rc]) {
            expect(yield* row(r.id)).toMatchObject({
              status: "pending",
              attempts: r.attempts - 1,
              claimToken: null,
              staleAt: null,
              runAt: r.runAt
            })
          }
          // The best waiter on each released lease is due in its place in the queue (run_at its
          // enqueue time, src/core/transitions.ts applyHandOff); the next one keeps its time.
          expect((yield* row(w1.id)).runAt).toBe(T0)
          expect((yield* row(w1b.id)).runAt).toBe(T0 + 60 * SECOND)
          expect((yield* row(w2.id)).runAt).toBe(T0)
          expect(yield* leases.ownerOf("key:k1")).toEqual(Option.none())
          expect(yield* leases.ownerOf("key:k2")).toEqual(Option.none())
          expect(yield* leases.ownerOf("key:k3")).toEqual(Option.some("someone-else"))

          // Again: fenced, nothing left to do. Nothing at all: nothing to do.
          expect(yield* store.handBack(claims, t2 + 1)).toEqual({ handedBack: 0, released: 0, woke: 0 })
          expect(yield* store.handBack([], t2 + 1)).toEqual({ handedBack: 0, released: 0, woke: 0 })
          expect((yield* row(w1b.id)).runAt).toBe(T0 + 60 * SECOND)
        })
      ))

    it.effect("a worker stopping past its grace period hands the interrupted attempt back at once and hands its key off", () =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const started = yield* Deferred.make<number>()
        const Stuck = keyed("stuck", "stuck", gate, started)
        yield* withJobs(
          [Stuck],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const one = yield* enqueue(Stuck, { n: 1 }, { priority: 1 })
            const two = yield* enqueue(Stuck, { n: 2 })
            const { scope } = yield* startWorker({
              host: "hb",
              concurrency: 2,
              pollInterval: "1 hour",
              gracePeriod: "100 millis"
            })
            yield* stoppedOnFailure(
              scope,
              gate,
              Effect.gen(function*() {
                // Both are claimed at once and race for the key: either may win it.
                const [running, waiting] = (yield* Deferred.await(started)) === 1 ? [one, two] : [two, one]
                // The other waits in the worker for its key (src/runtime/worker/keyGate.ts); once
                // that wait is over, it finds the key busy: deferred until the holder's lease should end.
                // (The clock moves a wait's length per look: the wait may not have begun at the first.)
                yield* eventually(Effect.zipRight(
                  TestClock.adjust(GATE_WAIT_MS),
                  Effect.map(row(waiting.id), (r) => r.status === "pending" && r.leaseName !== null)
                ))
                expect((yield* row(waiting.id)).runAt).toBeGreaterThan(T0)
                expect(yield* row(running.id)).toMatchObject({ status: "processing", attempts: 1 })

                const stoppingAt = yield* Clock.currentTimeMillis
                const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
                yield* settle
                yield* TestClock.adjust("100 millis")
                yield* Fiber.join(closing)
                // Not left processing for the reaper: pending now, the attempt given back, no backoff.
                expect(yield* row(running.id)).toMatchObject({
                  status: "pending",
                  attempts: 0,
                  claimToken: null,
                  runAt: T0,
                  lastError: null
                })
                expect(yield* (yield* JobLeases).ownerOf("key:stuck")).toEqual(Option.none())
                // Handed off: due (it was deferred past T0, above) in its place in the queue, its
                // run_at its enqueue time, not the hand-off's (src/core/transitions.ts applyHandOff).
                expect(stoppingAt).toBeGreaterThan(T0)
                expect((yield* row(waiting.id)).runAt).toBe(T0)
              })
            )
          })
        )
      }))

    it.effect("an attempt that does not stop when interrupted is not handed back: it stays for the reaper, its lease held", () =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const started = yield* Deferred.make<number>()
        const Stubborn = keyed("stubborn", "stubborn", gate, started, true)
        yield* withJobs(
          [Stubborn],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const { id } = yield* enqueue(Stubborn, { n: 1 })
            const { scope } = yield* startWorker({
              host: "hb2",
              concurrency: 1,
              pollInterval: "1 hour",
              gracePeriod: "100 millis"
            })
            yield* stoppedOnFailure(
              scope,
              gate,
              Effect.gen(function*() {
                yield* Deferred.await(started)
                const token = (yield* row(id)).claimToken
                const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
                yield* settle
                yield* TestClock.adjust("100 millis")
                yield* settle
                yield* TestClock.adjust("100 millis")
                yield* Fiber.join(closing)
                expect(yield* row(id)).toMatchObject({ status: "processing", attempts: 1, claimToken: token })
                expect(yield* (yield* JobLeases).ownerOf("key:stubborn")).toEqual(Option.some(token))
                yield* Deferred.succeed(gate, undefined)
              })
            )
          })
        )
      }))
  })
