/**
 * Hosts and the long-running worker (docs/behaviour.md §9) on every adapter: per-host cap, drain and
 * resume, tick, and the worker layer's loop and graceful shutdown. Bad worker options are refused
 * before any store call: that runs once, in test/unit/workerOptions.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Option, Ref, Scope, TestClock } from "effect"
import * as Metrics from "../../src/runtime/metrics.ts"
import { JobLeases, JobStore } from "../../src/JobStore.ts"
import { define, enqueue } from "../../src/runtime/Job.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor } from "../support/databases.ts"
import { eventually, gated, Ok, Payload, RunLog, settle, withJobs } from "../support/jobs.ts"
import { MAX_AHEAD_FACTOR } from "../../src/runtime/worker/claimAhead.ts"
import { parseScrape } from "../support/prometheus.ts"

const T0 = 1_791_039_632_175

const row = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.getOrThrow))
const withLog = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    Ref.make<ReadonlyArray<{ id: string; n: number; attempt: number }>>([]),
    (log) => Effect.provideService(effect, RunLog, log)
  )

/** A long-running worker (src/runtime/Worker.ts) in a scope of its own: close the scope to stop it. */
export const startWorker = (config: Worker.WorkerConfig) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(Worker.layer(config), scope)
    return { scope, api: Context.get(context, Worker.WorkerHandle) }
  })

/**
 * A worker whose outcome writes wait until `writes` opens (a slow database, as the worker sees
 * it), with the store below it.
 */
const startWritingLate = (host: string, writes: Deferred.Deferred<void>, concurrency = 1) =>
  Effect.gen(function*() {
    const store = yield* JobStore
    const late = JobStore.of({
      ...store,
      finish: (input) => Effect.zipRight(Deferred.await(writes), store.finish(input))
    })
    const { scope } = yield* Effect.provideService(
      startWorker({ host, concurrency, pollInterval: "20 millis", gracePeriod: "10 seconds" }),
      JobStore,
      late
    )
    return { scope, store }
  })

export const workerConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "wk"), { timeout: 180_000 })(`Hosts and worker conformance on ${adapter}`, (it) => {
    it.effect("per-host cap: at the cap a host claims nothing (capped); below it runs; other hosts' jobs don't count", () =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const Hold = gated("hold", gate)
        yield* withJobs(
          [Hold, Ok],
          withLog(Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            for (let n = 0; n < 4; n++) yield* enqueue(Hold, { n }, { priority: 10 })
            yield* enqueue(Ok, { n: 99 })
            const store = yield* JobStore
            const a1 = yield* Effect.fork(Worker.processNext({ host: "a", hostCap: 2 }))
            const a2 = yield* Effect.fork(Worker.processNext({ host: "a", hostCap: 2 }))
            const b1 = yield* Effect.fork(Worker.processNext({ host: "b", hostCap: 2 }))
            yield* eventually(Effect.map(store.list({ status: "processing", limit: 10 }), (r) => r.length === 3))
            expect(yield* Worker.processNext({ host: "a", hostCap: 2 })).toEqual(
              Worker.ProcessResult.Capped({ running: 2 })
            )
            // b has one running: room for one more
            const b2 = yield* Effect.fork(Worker.processNext({ host: "b", hostCap: 2 }))
            yield* eventually(Effect.map(store.list({ status: "processing", limit: 10 }), (r) => r.length === 4))
            expect(yield* Worker.processNext({ host: "b", hostCap: 2 })).toMatchObject({ _tag: "Capped" })
            // without a cap, a runs the plain job
            expect(yield* Worker.processNext({ host: "a" })).toMatchObject({ _tag: "Completed", job: { name: "ok" } })
            yield* Deferred.succeed(gate, undefined)
            for (const f of [a1, a2, b1, b2]) expect(yield* Fiber.join(f)).toMatchObject({ _tag: "Completed" })
          }))
        )
      }))

    it.effect("per-host cap holds under concurrent claims on one host", () =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const Hold = gated("hold", gate)
        yield* withJobs(
          [Hold],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            // Twenty claims at once for one host, each locking the host row. On a Galera cluster
            // they write it, so of each overlapping set all but one lose certification; sent again
            // at once, the last lost nine times in a row and its claim failed (every run of 8; one
            // in ten with ten claims). There a retry waits a random moment (docs/retries.md).
            for (let n = 0; n < 20; n++) yield* enqueue(Hold, { n })
            const fibers = yield* Effect.forEach(Array.from({ length: 20 }), () =>
              Effect.fork(Worker.processNext({ host: "a", hostCap: 4 })))
            const store = yield* JobStore
            // the capped ones return; the claimed ones wait on the gate
            const returned = Effect.map(Effect.forEach(fibers, Fiber.poll), (p) =>
              p.filter(Option.isSome).length)
            yield* eventually(Effect.map(returned, (n) => n === 16))
            expect((yield* store.list({ status: "processing", limit: 30 })).length).toBe(4)
            yield* Deferred.succeed(gate, undefined)
            const tags = (yield* Effect.forEach(fibers, Fiber.join)).map((r) => r._tag)
            expect(tags.filter((t) => t === "Completed")).toHaveLength(4)
            expect(tags.filter((t) => t === "Capped")).toHaveLength(16)
          })
        )
      }))

    it.effect("drain blocks, resume lifts, an expired drain counts as resumed; a draining host still reaps", () =>
      withJobs(
        [Ok],
        withLog(Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const { id } = yield* enqueue(Ok, { n: 1 })
          yield* Worker.drain({ host: "a" })
          expect(yield* Worker.processNext({ host: "a" })).toEqual(Worker.ProcessResult.Draining({ until: null }))
          expect((yield* row(id)).status).toBe("pending")
          // another host is not drained
          yield* Worker.resume({ host: "a" })
          yield* Worker.drain({ host: "a", expiresIn: "1 minute" })
          expect(yield* Worker.processNext({ host: "a" })).toEqual(
            Worker.ProcessResult.Draining({ until: T0 + 60_000 })
          )
          yield* TestClock.adjust("61 seconds")
          expect(yield* Worker.processNext({ host: "a" })).toMatchObject({ _tag: "Completed" })
          // a draining tick still reaps: a stale processing row is taken back
          const store = yield* JobStore
          const stale = yield* enqueue(Ok, { n: 2 })
          const claimed = yield* store.claim({
            queues: undefined,
            host: "gone",
            now: T0 + 61_000,
            claimToken: "t-gone",
            timeoutCap: undefined,
            hostCap: undefined
          })
          expect(claimed).toMatchObject({ _tag: "Claimed", job: { id: stale.id } })
          yield* Worker.drain({ host: "a" })
          yield* TestClock.adjust("1 hour")
          const t = yield* Worker.tick({ host: "a", maxJobs: 5 })
          expect(t).toMatchObject({ host: "a", draining: true, reaped: 1, processed: 0 })
          expect((yield* row(stale.id)).status).toBe("pending")
        }))
      ))

    it.effect("tick registers the host, runs up to maxJobs, and never counts a deferral as a failure", () => {
      const Excl = define({
        name: "excl",
        schema: Payload,
        concurrencyKeyFor: (p) => p.key,
        perform: () => Effect.void
      })
      return withJobs(
        [Ok, Excl],
        withLog(Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const store = yield* JobStore
          for (let n = 0; n < 5; n++) yield* enqueue(Ok, { n })
          const t = yield* Worker.tick({ host: "ticker", maxJobs: 3, codeVersion: "v1" })
          expect(t).toEqual({
            host: "ticker",
            processed: 3,
            failed: 0,
            fenced: 0,
            cancelled: 0,
            deferred: 0,
            leasesLost: 0,
            reaped: 0,
            scheduled: 0,
            capped: false,
            draining: false
          })
          expect(Option.getOrThrow(yield* store.getHost("ticker"))).toMatchObject({
            host: "ticker",
            codeVersion: "v1",
            draining: false
          })
          // a busy key: deferred, not failed
          yield* enqueue(Excl, { n: 1, key: "k" })
          const l = yield* JobLeases
          yield* l.ensureTable
          yield* l.tryAcquire({ name: "key:k", owner: "other", now: T0, ttlMs: 60_000 })
          const t2 = yield* Worker.tick({ host: "ticker", maxJobs: 10 })
          expect(t2).toMatchObject({ processed: 2, failed: 0, deferred: 1 })
        }))
      )
    })

    it.effect("the worker layer drains the queue with several fibers and stops cleanly when its scope closes", () => (
      withJobs(
        [Ok],
        withLog(Effect.gen(function*() {
          for (let n = 0; n < 30; n++) yield* enqueue(Ok, { n })
          const completed = Effect.map(
            Metrics.render,
            (text) => parseScrape(text).value("leasehold_jobs_completed_total", { job: "ok", queue: "default" }) ?? 0
          )
          const completedBefore = yield* completed
          const { api, scope } = yield* startWorker({ host: "lw", concurrency: 3, pollInterval: "20 millis" })
          // idle fibers sleep a poll interval on the TestClock: move it along while waiting
          yield* eventually(
            Effect.zipRight(TestClock.adjust("20 millis"), Effect.map(api.stats, (s) => s.processed === 30))
          )
          yield* Scope.close(scope, Exit.void)
          const log = yield* Effect.flatMap(RunLog, Ref.get)
          expect(new Set(log.map((r) => r.n)).size).toBe(30)
          expect((yield* api.stats).running).toBe(0)
          // the metrics saw them too (counters are process-wide, so at least these 30)
          expect((yield* completed) - completedBefore).toBeGreaterThanOrEqual(30)
        }))
      )
    ))

    it.effect("graceful shutdown: a running attempt finishes within the grace period and nothing is lost", () => (
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const started = yield* Deferred.make<void>()
        const Slow = gated("slow", gate, { started })
        yield* withJobs(
          [Slow],
          Effect.gen(function*() {
            const { id } = yield* enqueue(Slow, { n: 1 })
            const { scope } = yield* startWorker({
              host: "gs",
              concurrency: 1,
              pollInterval: "20 millis",
              gracePeriod: "10 seconds"
            })
            yield* Deferred.await(started)
            const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
            yield* settle
            expect((yield* row(id)).status).toBe("processing")
            yield* Deferred.succeed(gate, undefined)
            yield* Fiber.join(closing)
            expect((yield* row(id)).status).toBe("completed")
          })
        )
      })
    ))

    it.effect("a runner starts its next job while a plain outcome is written (not on SQLite); closing waits for the write", () => (
      Effect.gen(function*() {
        const writes = yield* Deferred.make<void>()
        yield* withJobs(
          [Ok],
          withLog(Effect.gen(function*() {
            const a = yield* enqueue(Ok, { n: 1 })
            const b = yield* enqueue(Ok, { n: 2 })
            const { scope, store } = yield* startWritingLate("wb", writes)
            const log = yield* RunLog
            const ran = Effect.map(Ref.get(log), (l) => l.map((e) => e.n).sort())
            if (store.remote) {
              // One runner ran both jobs: it did not wait for the first one's outcome to be written.
              yield* eventually(Effect.map(ran, (n) => n.length === 2))
              expect(yield* ran).toEqual([1, 2])
              expect([(yield* row(a.id)).status, (yield* row(b.id)).status]).toEqual(["processing", "processing"])
            } else {
              // SQLite: the runner waits for the write, which costs no round trip to a server.
              yield* eventually(Effect.map(ran, (n) => n.length === 1))
              yield* settle
              expect(yield* ran).toEqual([1])
            }
            // Closing the worker's scope waits for the write still to come.
            const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
            yield* settle
            expect(closing.unsafePoll()).toBeNull()
            yield* Deferred.succeed(writes, undefined)
            yield* Fiber.join(closing)
            expect((yield* row(a.id)).status).toBe("completed")
            // On SQLite the second job never started: it was given back (or never claimed).
            expect((yield* row(b.id)).status).toBe(store.remote ? "completed" : "pending")
          }))
        )
      })
    ))

    it.effect("outcomes written behind their runners are bounded: past 9 × concurrency, runners wait for writes, and all go on", () => (
      Effect.gen(function*() {
        const writes = yield* Deferred.make<void>()
        yield* withJobs(
          [Ok],
          withLog(Effect.gen(function*() {
            const ids: Array<string> = []
            for (let n = 0; n < 2 * MAX_AHEAD_FACTOR + 5; n++) ids.push((yield* enqueue(Ok, { n })).id)
            // Two runners, so both wait at the bound; each must be woken when writes land (else
            // the worker's close waits out its grace period, which the TestClock never ends).
            const { scope, store } = yield* startWritingLate("wb-bound", writes, 2)
            const log = yield* RunLog
            // SQLite's runners wait for each write: a run each. Elsewhere, one per outcome they may write behind.
            const bound = store.remote ? 2 * MAX_AHEAD_FACTOR : 2
            yield* eventually(Effect.map(Ref.get(log), (l) => l.length === bound))
            yield* settle
            yield* settle
            expect((yield* Ref.get(log)).length).toBe(bound)
            yield* Deferred.succeed(writes, undefined)
            yield* eventually(Effect.map(Ref.get(log), (l) => l.length === ids.length))
            yield* Scope.close(scope, Exit.void)
            for (const id of ids) expect((yield* row(id)).status).toBe("completed")
          }))
        )
      })
    ))

    it.effect("an enqueue wakes an idle worker of the same process at once, not after its poll interval", () => (
      withJobs(
        [Ok],
        withLog(Effect.gen(function*() {
          const { api, scope } = yield* startWorker({ host: "wake", concurrency: 2, pollInterval: "1 hour" })
          // Idle, asleep for an hour of a clock that does not move here.
          yield* settle
          yield* enqueue(Ok, { n: 1 })
          yield* eventually(Effect.map(api.stats, (s) => s.processed === 1))
          yield* enqueue(Ok, { n: 2 })
          yield* eventually(Effect.map(api.stats, (s) => s.processed === 2))
          yield* Scope.close(scope, Exit.void)
        }))
      )
    ))

    it.effect("an enqueue right after the worker starts rings it: it listens before its first look", () => (
      withJobs(
        [Ok],
        withLog(Effect.gen(function*() {
          // No pause between the start and the enqueue: the worker's first claim may already
          // have found nothing, and its poll is an hour of a clock that does not move here.
          const { api, scope } = yield* startWorker({ host: "wake-early", concurrency: 1, pollInterval: "1 hour" })
          yield* Effect.yieldNow()
          yield* enqueue(Ok, { n: 1 })
          yield* eventually(Effect.map(api.stats, (s) => s.processed === 1))
          yield* Scope.close(scope, Exit.void)
        }))
      )
    ))

    it.effect("graceful shutdown gives back the claimed jobs no fiber started: pending again, attempt returned", () => (
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const started = yield* Deferred.make<void>()
        const Slow = gated("slow", gate, { started })
        yield* withJobs(
          [Slow],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const first = yield* enqueue(Slow, { n: 1 }, { priority: 2 })
            const second = yield* enqueue(Slow, { n: 2 }, { priority: 1 })
            const { scope } = yield* startWorker({
              host: "gb",
              concurrency: 1,
              pollInterval: "20 millis",
              gracePeriod: "10 seconds"
            })
            yield* Deferred.await(started)
            // One fiber: the first job runs, the second waits claimed in the worker, ahead of it.
            yield* eventually(Effect.map(row(second.id), (r) => r.status === "processing"))
            const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
            yield* eventually(Effect.map(row(second.id), (r) => r.status === "pending"))
            expect(yield* row(second.id)).toMatchObject({ status: "pending", attempts: 0, claimToken: null, runAt: T0 })
            expect((yield* row(first.id)).status).toBe("processing")
            yield* Deferred.succeed(gate, undefined)
            yield* Fiber.join(closing)
            expect((yield* row(first.id)).status).toBe("completed")
            expect((yield* row(second.id)).status).toBe("pending")
          })
        )
      })
    ))

    it.effect("a long-running worker times each attempt out at its own deadline, a later shorter one first", () => (
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const startedLong = yield* Deferred.make<void>()
        const startedShort = yield* Deferred.make<void>()
        const Long = gated("long", gate, { timeout: "60 seconds", started: startedLong })
        const Short = gated("short", gate, { timeout: "10 seconds", started: startedShort })
        yield* withJobs(
          [Long, Short],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const long = yield* enqueue(Long, { n: 1 }, { priority: 2 })
            const short = yield* enqueue(Short, { n: 2 }, { priority: 1 })
            const { scope } = yield* startWorker({
              host: "wd",
              concurrency: 2,
              pollInterval: "1 hour",
              gracePeriod: "1 second"
            })
            yield* Deferred.await(startedLong)
            yield* Deferred.await(startedShort)
            yield* settle
            yield* TestClock.adjust("9 seconds")
            yield* settle
            expect((yield* row(short.id)).status).toBe("processing")
            yield* TestClock.adjust("1 second")
            // An attempt that starts while the worker's watchdog sleeps a step counts from the
            // step's end: up to one step (250 ms) late, never early (src/runtime/worker/watchdog.ts).
            // Whether the second attempt started before the first step is a race.
            yield* settle
            yield* TestClock.adjust("250 millis")
            yield* eventually(Effect.map(row(short.id), (r) => r.status === "pending"))
            expect((yield* row(short.id)).lastError).toContain("timed out after 10 s")
            expect((yield* row(long.id)).status).toBe("processing")
            yield* TestClock.adjust("50 seconds")
            yield* eventually(Effect.map(row(long.id), (r) => r.status === "pending"))
            expect((yield* row(long.id)).lastError).toContain("timed out after 60 s")
            // The short job's retry is due by now, so the worker may run it again. Opened, the gate
            // lets such a run end: the close need not wait out a grace period on a stopped clock.
            yield* Deferred.succeed(gate, undefined)
            yield* Scope.close(scope, Exit.void)
          })
        )
      })
    ))

    it.effect("a long-running worker's attempt whose perform ignores its interruption times out all the same: failed at its deadline, its runner free, its lease left to expire", () => (
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const started = yield* Deferred.make<void>()
        const runs = yield* Ref.make(0)
        const Stubborn = define({
          name: "stubborn-timeout",
          schema: Payload,
          concurrencyKey: "stubborn-timeout",
          timeout: "10 seconds",
          // Ignores interruption, as a blocked call would.
          perform: () =>
            Effect.uninterruptible(
              Effect.zipRight(
                Effect.zipRight(Ref.update(runs, (n) => n + 1), Deferred.succeed(started, undefined)),
                Deferred.await(gate)
              )
            )
        })
        const Next = define({ name: "after-stubborn", schema: Payload, perform: () => Effect.void })
        yield* withJobs(
          [Stubborn, Next],
          Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const stubborn = yield* enqueue(Stubborn, { n: 1 })
            const { api, scope } = yield* startWorker({
              host: "stubborn",
              concurrency: 1,
              pollInterval: "1 hour",
              gracePeriod: "1 second"
            })
            yield* Deferred.await(started)
            const token = (yield* row(stubborn.id)).claimToken
            yield* settle
            yield* TestClock.adjust("10 seconds")
            yield* settle
            // Up to one watchdog step late (src/runtime/worker/watchdog.ts).
            yield* TestClock.adjust("250 millis")
            yield* eventually(Effect.map(row(stubborn.id), (r) => r.status === "pending"))
            expect(yield* row(stubborn.id)).toMatchObject({ attempts: 1, claimToken: null })
            expect((yield* row(stubborn.id)).lastError).toContain("timed out after 10 s")
            // perform may still be running: its lease stays its attempt's until it expires.
            expect(yield* (yield* JobLeases).ownerOf("key:stubborn-timeout")).toEqual(Option.some(token))
            expect(yield* api.stats).toMatchObject({ failed: 1, running: 0 })
            // The worker's one runner is free: the next job runs while perform is still stuck.
            const next = yield* enqueue(Next, { n: 2 })
            yield* api.wake
            yield* eventually(Effect.map(row(next.id), (r) => r.status === "completed"))
            expect(yield* Ref.get(runs)).toBe(1)
            // The stop does not wait for the stuck perform: on the TestClock, a wait for it would never end.
            yield* Scope.close(scope, Exit.void)
            yield* Deferred.succeed(gate, undefined)
          })
        )
      })
    ))

    it.effect("graceful shutdown: past the grace period the attempt is interrupted and handed back, not left for the reaper", () => (
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const started = yield* Deferred.make<void>()
        const Stuck = gated("stuck", gate, { started })
        yield* withJobs(
          [Stuck],
          Effect.gen(function*() {
            const { id } = yield* enqueue(Stuck, { n: 1 })
            const { scope } = yield* startWorker({
              host: "gs2",
              concurrency: 1,
              pollInterval: "20 millis",
              gracePeriod: "100 millis"
            })
            yield* Deferred.await(started)
            const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
            yield* settle
            yield* TestClock.adjust("100 millis")
            yield* Fiber.join(closing)
            // not completed, not failed, not left processing: pending again, its attempt given back
            expect(yield* row(id)).toMatchObject({ status: "pending", attempts: 0, claimToken: null })
          })
        )
      })
    ))
  })
