/**
 * Cancellation (docs/behaviour.md §15) on every adapter, under TestClock: one job
 * by id or many by filter, typed errors that change nothing, a running attempt stopped at its
 * heartbeat (never reported as fenced) with its lease released and handed off, and a claimed job
 * waiting in a long-running worker's buffer that never starts.
 */
import { expect, layer } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, Logger, Option, Ref, Scope, TestClock } from "effect"
import { CancelFilterError, JobNotCancellableError, JobNotFoundError } from "../../src/core/errors.ts"
import { JobLeases, JobStore } from "../../src/JobStore.ts"
import {
  cancel,
  type CancelWhere,
  cancelWhere,
  define,
  discardDead,
  enqueue,
  heartbeat,
  retryDead
} from "../../src/runtime/Job.ts"
import * as Metrics from "../../src/runtime/metrics.ts"
import { RECHECK_AFTER_MS } from "../../src/runtime/worker/longRunning.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor } from "../support/databases.ts"
import { Boom, eventually, gated, Ok, Payload, RunLog, withJobs } from "../support/jobs.ts"
import { parseScrape } from "../support/prometheus.ts"
import { startWorker } from "./worker.ts"

const T0 = 1_791_039_632_175

const row = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.getOrThrow))
const statuses = (ids: ReadonlyArray<string>) => Effect.forEach(ids, (id) => Effect.map(row(id), (r) => r.status))
const withLog = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    Ref.make<ReadonlyArray<{ id: string; n: number; attempt: number }>>([]),
    (log) => Effect.provideService(effect, RunLog, log)
  )

/**
 * A keyed job that says it started, waits on `gate`, then checks in with a heartbeat and records
 * what it failed with; `obey`: it lets the failure end perform, else it carries on and ends as
 * `end` says.
 */
const checkingIn = (
  name: string,
  gate: Deferred.Deferred<void>,
  started: Deferred.Deferred<void>,
  seen: Ref.Ref<ReadonlyArray<string>>,
  end: "obey" | "complete" | "fail"
) =>
  define({
    name,
    schema: Payload,
    concurrencyKey: "cancel-key",
    perform: () =>
      Effect.gen(function*() {
        yield* Deferred.succeed(started, undefined)
        yield* Deferred.await(gate)
        const beat = heartbeat.pipe(Effect.tapError((e) => Ref.update(seen, (s) => [...s, e._tag])))
        if (end === "obey") return yield* beat
        yield* Effect.ignore(beat)
        if (end === "fail") return yield* Effect.fail(new Error("failed after the cancel"))
      })
  })

/** Runs `effect` with every log message collected in `lines`. */
const collectingLogs = <A, E, R>(lines: Array<string>, effect: Effect.Effect<A, E, R>) =>
  Effect.provide(
    effect,
    Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ message }) => void lines.push(Array.isArray(message) ? message.join(" ") : String(message)))
    )
  )

export const cancelConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "cx"), { timeout: 180_000 })(`Cancellation conformance on ${adapter}`, (it) => {
    it.effect("cancel: a pending job is cancelled and never runs; a finished job or an unknown id is a typed error that changes nothing", () =>
      withJobs(
        [Ok],
        withLog(Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const a = yield* enqueue(Ok, { n: 1 }, { priority: 5 })
          const b = yield* enqueue(Ok, { n: 2 })
          expect(yield* cancel(a.id)).toEqual({ id: a.id, status: "cancelled", wasRunning: false })
          expect(yield* row(a.id)).toMatchObject({ status: "cancelled", failedAt: T0, attempts: 0, history: [] })
          // the higher-priority job was cancelled: only the other one runs
          expect(yield* Worker.processNext({ host: "h" })).toMatchObject({ _tag: "Completed", job: { id: b.id } })
          expect(yield* Worker.processNext({ host: "h" })).toMatchObject({ _tag: "Idle" })
          expect((yield* Effect.flatMap(RunLog, Ref.get)).map((r) => r.id)).toEqual([b.id])

          const completed = yield* row(b.id)
          expect(yield* Effect.flip(cancel(a.id))).toEqual(
            new JobNotCancellableError({ jobId: a.id, status: "cancelled" })
          )
          expect(yield* Effect.flip(cancel(b.id))).toEqual(
            new JobNotCancellableError({ jobId: b.id, status: "completed" })
          )
          expect(yield* Effect.flip(cancel("no-such-job"))).toEqual(new JobNotFoundError({ jobId: "no-such-job" }))
          expect(yield* row(b.id)).toEqual(completed)
          // the row can be purged like any finished one (its end is failed_at)
          expect(yield* (yield* JobStore).purge("cancelled", T0 + 1)).toBe(1)
        }))
      ))

    it.effect("cancelWhere: by type, queue and status, only unfinished jobs, in one call; a bad filter is CancelFilterError and cancels nothing", () =>
      withJobs(
        [Ok, Boom],
        withLog(Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const done = yield* enqueue(Ok, { n: 0 })
          expect(yield* Worker.processNext({ host: "h" })).toMatchObject({ _tag: "Completed" })
          const ok1 = yield* enqueue(Ok, { n: 1 })
          const ok2 = yield* enqueue(Ok, { n: 2 })
          const mail = yield* enqueue(Ok, { n: 3 }, { queue: "mail" })
          const boom = yield* enqueue(Boom, { n: 4 })
          const all = [done.id, ok1.id, ok2.id, mail.id, boom.id]

          const bad: ReadonlyArray<[unknown, string]> = [
            [{}, "filter"],
            [{ status: "completed" }, "status"],
            [{ name: "" }, "name"],
            [{ queue: "q".repeat(256) }, "queue"],
            [{ id: ok1.id }, "id"],
            [{ name: 7 }, "name"]
          ]
          for (const [filter, field] of bad) {
            const error = yield* Effect.flip(cancelWhere(filter as CancelWhere))
            expect(error).toBeInstanceOf(CancelFilterError)
            expect(error).toMatchObject({ field })
          }
          expect(yield* statuses(all)).toEqual(["completed", "pending", "pending", "pending", "pending"])

          expect(yield* cancelWhere({ name: "ok", queue: "default" })).toEqual({ cancelled: 2 })
          expect(yield* statuses(all)).toEqual(["completed", "cancelled", "cancelled", "pending", "pending"])
          // a processing job, by status
          const store = yield* JobStore
          const taken = yield* store.claim({
            queues: ["mail"],
            host: "h",
            now: T0,
            claimToken: "t-mail",
            timeoutCap: undefined,
            hostCap: undefined
          })
          expect(taken).toMatchObject({ _tag: "Claimed", job: { id: mail.id } })
          expect(yield* cancelWhere({ status: "pending", queue: "mail" })).toEqual({ cancelled: 0 })
          expect(yield* cancelWhere({ status: "processing" })).toEqual({ cancelled: 1 })
          expect(yield* row(mail.id)).toMatchObject({ status: "cancelled", claimToken: "t-mail" })
          expect(yield* cancelWhere({ status: "pending" })).toEqual({ cancelled: 1 })
          expect(yield* statuses(all)).toEqual(["completed", "cancelled", "cancelled", "cancelled", "cancelled"])
          expect(yield* cancelWhere({ name: "ok" })).toEqual({ cancelled: 0 })
          expect(yield* Worker.processQueue({ limit: 0 })).toMatchObject({ processed: 0, failed: 0, cancelled: 0 })
        }))
      ))

    it.effect("a running job stops at its next heartbeat: perform sees JobCancelled, the attempt ends Cancelled, its lease is released and handed off", () =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const started = yield* Deferred.make<void>()
        const seen = yield* Ref.make<ReadonlyArray<string>>([])
        const Beat = checkingIn("beat", gate, started, seen, "obey")
        const lines: Array<string> = []
        yield* withJobs(
          [Beat],
          collectingLogs(
            lines,
            Effect.gen(function*() {
              yield* TestClock.setTime(T0)
              const running = yield* enqueue(Beat, { n: 1 }, { priority: 1 })
              const waiting = yield* enqueue(Beat, { n: 2 })
              const cancelledMetric = Effect.map(
                Metrics.render,
                (text) =>
                  parseScrape(text).value("leasehold_jobs_cancelled_total", { job: "beat", queue: "default" }) ?? 0
              )
              const before = yield* cancelledMetric
              const attempt = yield* Effect.fork(Worker.processNext({ host: "h" }))
              yield* Deferred.await(started)
              // the other job of the key finds it busy and waits
              expect(yield* Worker.processNext({ host: "h" })).toMatchObject({
                _tag: "Deferred",
                job: { id: waiting.id }
              })
              expect((yield* row(waiting.id)).runAt).toBeGreaterThan(T0)

              yield* TestClock.adjust("5 seconds")
              expect(yield* cancel(running.id)).toEqual({ id: running.id, status: "cancelled", wasRunning: true })
              // cancelled at once; the lease stays with the running attempt until it stops
              expect(yield* row(running.id)).toMatchObject({ status: "cancelled", failedAt: T0 + 5000 })
              // the cancel ends the attempt in its history
              const ended = [{
                attempt: 1,
                startedAt: T0,
                endedAt: T0 + 5000,
                outcome: "cancelled",
                error: null,
                host: "h"
              }]
              expect((yield* row(running.id)).history).toEqual(ended)
              expect(Option.isSome(yield* (yield* JobLeases).ownerOf("key:cancel-key"))).toBe(true)

              yield* Deferred.succeed(gate, undefined)
              const result = yield* Fiber.join(attempt)
              expect(result).toEqual(
                Worker.ProcessResult.Cancelled({
                  job: { id: running.id, name: "beat", queue: "default", attempt: 1 },
                  leaseLost: false
                })
              )
              expect(yield* Ref.get(seen)).toEqual(["JobCancelled"])
              expect((yield* cancelledMetric) - before).toBe(1)
              expect(yield* row(running.id)).toMatchObject({ status: "cancelled", attempts: 1, history: ended })
              expect(yield* (yield* JobLeases).ownerOf("key:cancel-key")).toEqual(Option.none())
              // Handed off: due in its place, its run_at its enqueue time (src/core/transitions.ts applyHandOff).
              expect((yield* row(waiting.id)).runAt).toBe(T0)
            })
          )
        )
        expect(lines.filter((l) => /fenced/i.test(l))).toEqual([])
        expect(lines.some((l) => l.startsWith("attempt cancelled"))).toBe(true)
      }))

    it.effect("a cancelled attempt that ignores JobCancelled and completes or fails is counted Cancelled, never Fenced; the job stays cancelled", () =>
      Effect.gen(function*() {
        const lines: Array<string> = []
        for (const end of ["complete", "fail"] as const) {
          const gate = yield* Deferred.make<void>()
          const started = yield* Deferred.make<void>()
          const seen = yield* Ref.make<ReadonlyArray<string>>([])
          const Stubborn = checkingIn(`stubborn-${end}`, gate, started, seen, end)
          yield* withJobs(
            [Stubborn],
            collectingLogs(
              lines,
              Effect.gen(function*() {
                yield* TestClock.setTime(T0)
                const { id } = yield* enqueue(Stubborn, { n: 1 })
                const attempt = yield* Effect.fork(
                  Worker.processQueue({ limit: 1 })
                )
                yield* Deferred.await(started)
                yield* cancel(id)
                yield* Deferred.succeed(gate, undefined)
                expect(yield* Fiber.join(attempt)).toMatchObject({ processed: 0, failed: 0, fenced: 0, cancelled: 1 })
                expect(yield* Ref.get(seen)).toEqual(["JobCancelled"])
                // one record, the cancel's: the outcome written after it changed nothing
                expect((yield* row(id)).history.map((h) => h.outcome)).toEqual(["cancelled"])
                expect(yield* row(id)).toMatchObject({ status: "cancelled", lastError: null })
                // cancelled by mistake: retried by id, it is pending again with fresh attempts
                expect(yield* retryDead({ ids: [id] })).toBe(1)
                expect(yield* row(id)).toMatchObject({ status: "pending", attempts: 0, claimToken: null })
                expect(yield* discardDead({ ids: [id] })).toBe(0)
                expect(yield* (yield* JobLeases).ownerOf("key:cancel-key")).toEqual(Option.none())
              })
            )
          )
        }
        expect(lines.filter((l) => /fenced/i.test(l))).toEqual([])
      }))

    // One runner: a gated job runs while a second waits claimed in the worker's buffer; the
    // second is cancelled there, the Clock moves `waitedMs`, then the first ends. Returns how
    // many times the second's perform ran; both ends are checked here.
    const cancelWhileBuffered = (waitedMs: number) =>
      Effect.gen(function*() {
        const gate = yield* Deferred.make<void>()
        const started = yield* Deferred.make<void>()
        const Slow = gated("slow", gate, { started })
        return yield* withJobs(
          [Slow, Ok],
          withLog(Effect.gen(function*() {
            yield* TestClock.setTime(T0)
            const first = yield* enqueue(Slow, { n: 1 }, { priority: 2 })
            const second = yield* enqueue(Ok, { n: 2 }, { priority: 1 })
            const { api, scope } = yield* startWorker({ host: "cx", concurrency: 1, pollInterval: "1 hour" })
            yield* Deferred.await(started)
            yield* eventually(Effect.map(row(second.id), (r) => r.status === "processing"))
            expect(yield* cancel(second.id)).toMatchObject({ wasRunning: true })
            yield* TestClock.adjust(Duration.millis(waitedMs))
            yield* Deferred.succeed(gate, undefined)
            yield* eventually(Effect.map(api.stats, (s) => s.processed === 1 && s.cancelled === 1))
            expect(yield* statuses([first.id, second.id])).toEqual(["completed", "cancelled"])
            yield* Scope.close(scope, Exit.void)
            return (yield* Effect.flatMap(RunLog, Ref.get)).length
          }))
        )
      })

    it.effect("a claimed job that waited RECHECK_AFTER_MS or more in a long-running worker's buffer and was cancelled never starts; the worker counts it cancelled", () =>
      Effect.map(cancelWhileBuffered(RECHECK_AFTER_MS), (runs) => expect(runs).toBe(0)))

    it.effect("a buffered job cancelled less than RECHECK_AFTER_MS after its claim starts, but its outcome is not written: counted cancelled, the row stays cancelled", () =>
      // The Clock has not moved since the claim: the job starts without being read again.
      Effect.map(cancelWhileBuffered(0), (runs) => expect(runs).toBe(1)))
  })
