/**
 * Retention (docs/behaviour.md §13) on every adapter: completed jobs are purged after 7 days and
 * dead and cancelled ones after 30 by default, host rows not seen for an hour pruned (draining ones kept), by
 * the long-running worker in bounded batches, configurable or off. Timing runs under TestClock.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Either, Exit, Option, Scope, TestClock } from "effect"
import { WorkerConfigError } from "../../src/core/errors.ts"
import { JobStore } from "../../src/JobStore.ts"
import { cancel, define, enqueue } from "../../src/runtime/Job.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor } from "../support/databases.ts"
import { eventually, Payload, settle, withJobs } from "../support/jobs.ts"
import { startWorker } from "./worker.ts"

const T0 = 1_791_039_632_175
const SECOND = 1000
const HOUR = 3_600_000
const DAY = 24 * HOUR

const Fine = define({ name: "fine", schema: Payload, perform: () => Effect.void })
const Doomed = define({ name: "doomed", schema: Payload, maxRetries: 0, perform: () => Effect.fail(new Error("no")) })

const statuses = Effect.flatMap(
  JobStore,
  (s) => Effect.map(s.list({ limit: 100 }), (rows) => rows.map((r) => `${r.name}:${r.status}`).sort())
)
const hostNames = Effect.flatMap(JobStore, (s) => Effect.map(s.listHosts, (hs) => hs.map((h) => h.host)))

/** `n` jobs of `type` run to their end at the current time. */
const finished = (type: typeof Fine | typeof Doomed, n: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < n; i++) yield* enqueue(type, { n: i })
    for (let i = 0; i < n; i++) yield* Worker.processNext({ host: "runner" })
  })

export const retentionConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "rt"), { timeout: 180_000 })(`Retention conformance on ${adapter}`, (it) => {
    it.effect("purge in batches takes the longest finished first; hosts not seen are pruned unless draining", () =>
      withJobs(
        [Fine],
        Effect.gen(function*() {
          const store = yield* JobStore
          yield* TestClock.setTime(T0)
          const ids: Array<string> = []
          for (let n = 0; n < 3; n++) {
            ids.push((yield* enqueue(Fine, { n })).id)
            yield* Worker.processNext({ host: "runner" })
            yield* TestClock.adjust(SECOND)
          }
          expect(yield* store.purge("completed", T0 + 3 * SECOND, 2)).toBe(2)
          expect(Option.isSome(yield* store.get(ids[2]!))).toBe(true)
          expect(yield* store.purge("completed", T0 + 2 * SECOND, 2)).toBe(0)
          expect(yield* store.purge("completed", T0 + 3 * SECOND, 2)).toBe(1)

          const fields = { maxConcurrent: 0, codeVersion: null }
          yield* store.touchHost("old", T0, fields)
          yield* store.drain("parked", T0, null)
          yield* store.drain("lapsed", T0, T0 + 60 * SECOND)
          yield* store.touchHost("fresh", T0 + 2 * HOUR, fields)
          expect(yield* store.pruneHosts(T0 + HOUR, T0 + 2 * HOUR)).toBe(2)
          expect(yield* hostNames).toEqual(["fresh", "parked"])
        })
      ))

    it.effect("a worker purges completed jobs after 7 days and dead ones after 30 by default, and prunes silent hosts", () =>
      withJobs(
        [Fine, Doomed],
        Effect.gen(function*() {
          const store = yield* JobStore
          yield* TestClock.setTime(T0)
          yield* finished(Fine, 3)
          yield* finished(Doomed, 2)
          // A cancelled job is kept as long as a dead one.
          yield* cancel((yield* enqueue(Fine, { n: 9 })).id)
          yield* store.touchHost("ghost", T0, { maxConcurrent: 0, codeVersion: null })
          // 30 s before the 7 days are up: the pass at start deletes the silent host only.
          yield* TestClock.setTime(T0 + 7 * DAY - 30 * SECOND)
          const every = "1 minute"
          const a = yield* startWorker({
            host: "w",
            pollInterval: every,
            reapInterval: every,
            retention: { batchSize: 2, interval: every }
          })
          yield* eventually(Effect.map(hostNames, (h) => h.join() === "w"))
          expect((yield* statuses).length).toBe(6)
          // The next pass, a minute later: the completed jobs go, in batches of 2; the dead stay.
          yield* settle
          yield* TestClock.adjust(every)
          yield* eventually(Effect.map(statuses, (s) => s.length === 3))
          expect(yield* statuses).toEqual(["doomed:failed", "doomed:failed", "fine:cancelled"])
          yield* Scope.close(a.scope, Exit.void)
          // 30 days and a second after they died, a worker with the defaults deletes them at start.
          yield* TestClock.setTime(T0 + 30 * DAY + SECOND)
          const b = yield* startWorker({ host: "w" })
          yield* eventually(Effect.map(statuses, (s) => s.length === 0))
          yield* Scope.close(b.scope, Exit.void)
        })
      ))

    it.effect("lost-lease records: newest first; retention drops those past 7 days and all but the newest 1,000", () =>
      withJobs(
        [],
        Effect.gen(function*() {
          const store = yield* JobStore
          yield* store.pruneLostLeases(Number.MAX_SAFE_INTEGER, 1)
          const record = (i: number) =>
            store.recordLostLease({
              id: `00000000-0000-4000-8000-00000000100${i}`,
              leaseName: `job:Lost${i}`,
              jobId: `00000000-0000-4000-8000-00000000200${i}`,
              jobName: "Lost",
              attempt: i + 1,
              host: i === 0 ? null : `host-${i}`,
              fencingToken: i === 0 ? null : BigInt(40 + i),
              holder: i === 0 ? null : "thief",
              lostAt: T0 + i * DAY,
              detected: i % 2 === 0 ? "ended" : "timed out"
            })
          for (let i = 0; i < 5; i++) yield* record(i)
          const names = Effect.map(store.lostLeases(10), (rows) => rows.map((r) => r.leaseName))
          expect((yield* store.lostLeases(3)).map((r) => r.leaseName)).toEqual(["job:Lost4", "job:Lost3", "job:Lost2"])
          expect((yield* store.lostLeases(10))[3]).toEqual({
            id: "00000000-0000-4000-8000-000000001001",
            leaseName: "job:Lost1",
            jobId: "00000000-0000-4000-8000-000000002001",
            jobName: "Lost",
            attempt: 2,
            host: "host-1",
            fencingToken: 41n,
            holder: "thief",
            lostAt: T0 + DAY,
            detected: "timed out"
          })
          expect((yield* store.lostLeases(10))[4]).toMatchObject({ host: null, fencingToken: null, holder: null })
          // Only the newest 3 kept.
          expect(yield* store.pruneLostLeases(null, 3)).toBe(2)
          expect(yield* names).toEqual(["job:Lost4", "job:Lost3", "job:Lost2"])
          // A pass 7 days and a millisecond after Lost2 was lost drops it (the default window).
          yield* TestClock.setTime(T0 + 9 * DAY + 1)
          expect(yield* Worker.runRetention({ completed: false, dead: false, hosts: false })).toEqual({
            completed: 0,
            dead: 0,
            hosts: 0,
            lostLeases: 1
          })
          expect(yield* names).toEqual(["job:Lost4", "job:Lost3"])
          // Kept for ever by age, yet never more than 1,000.
          yield* TestClock.setTime(T0 + 400 * DAY)
          expect((yield* Worker.runRetention({ lostLeases: false })).lostLeases).toBe(0)
          expect(yield* names).toEqual(["job:Lost4", "job:Lost3"])
        })
      ))

    it.effect("retention is configurable or off", () =>
      withJobs(
        [Fine, Doomed],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          yield* finished(Fine, 2)
          yield* finished(Doomed, 1)
          yield* TestClock.setTime(T0 + 40 * DAY)
          // Off: nothing is deleted, not even by a worker.
          const off = yield* startWorker({ host: "w", retention: false })
          expect(yield* Worker.runRetention(false)).toEqual({ completed: 0, dead: 0, hosts: 0, lostLeases: 0 })
          yield* Scope.close(off.scope, Exit.void)
          expect((yield* statuses).length).toBe(3)
          // One kind only, once, as a scheduler would run it.
          expect(yield* Worker.runRetention({ completed: "1 day", dead: false, hosts: false })).toEqual({
            completed: 2,
            dead: 0,
            hosts: 0,
            lostLeases: 0
          })
          expect(yield* statuses).toEqual(["doomed:failed"])
          expect(yield* hostNames).toEqual(["w"])
          // Bad values name the field and delete nothing.
          for (
            const [bad, field] of [
              [{ completed: -1 }, "retention.completed"],
              [{ dead: "soon" }, "retention.dead"],
              [{ interval: 0 }, "retention.interval"],
              [{ batchSize: 0 }, "retention.batchSize"]
            ] as const
          ) {
            const refused = yield* Effect.either(Worker.runRetention(bad as Worker.RetentionConfig))
            expect(Either.isLeft(refused) && refused.left).toBeInstanceOf(WorkerConfigError)
            expect(Either.isLeft(refused) && refused.left).toMatchObject({ field })
          }
          expect(yield* statuses).toEqual(["doomed:failed"])
        })
      ))
  })
