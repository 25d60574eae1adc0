/**
 * Recurring jobs (docs/behaviour.md §14) on every adapter: one enqueue per slot however many
 * workers run (passes raced by hand, ticks, and long-running workers on the TestClock), the
 * catch-up policies after downtime, registration, and a changed definition. Cron parsing and bad schedules
 * are store-free: test/unit/schedules.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Exit, Ref, Schema, Scope, TestClock } from "effect"
import { JobStore } from "../../src/JobStore.ts"
import { define, JobContext, jobsLayer } from "../../src/runtime/Job.ts"
import * as Schedules from "../../src/runtime/Schedules.ts"
import * as Worker from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor } from "../support/databases.ts"
import { eventually, RunLog, withJobs } from "../support/jobs.ts"
import { startWorker } from "./worker.ts"

/** 2026-06-01T00:00:00Z: on every slot of the crons below. */
const T0 = Date.UTC(2026, 5, 1)
const SECOND = 1000
const HOUR = 3_600_000

/** A job type on `cron` that records its runs (n: the slot's offset from T0 in seconds, from the job's run_at). */
const scheduled = (name: string, cron: string, catchUp: "once" | "skip" = "once") =>
  define({
    name,
    schema: Schema.Struct({ label: Schema.String }),
    schedule: { cron, catchUp, payload: { label: name } },
    perform: () =>
      Effect.gen(function*() {
        const ctx = yield* JobContext
        const log = yield* RunLog
        yield* Ref.update(log, (l) => [...l, { id: ctx.jobId, n: 0, attempt: ctx.attempt }])
      })
  })

const withLog = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    Ref.make<ReadonlyArray<{ id: string; n: number; attempt: number }>>([]),
    (log) => Effect.provideService(effect, RunLog, log)
  )

/** The jobs of `name`, oldest slot first. */
const jobsOf = (name: string) =>
  Effect.flatMap(
    JobStore,
    (s) => Effect.map(s.list({ name, limit: 1000 }), (rows) => [...rows].sort((a, b) => a.runAt - b.runAt))
  )

const rowOf = (name: string) =>
  Effect.map(Schedules.list, (rows) => {
    const row = rows.find((r) => r.name === name)
    if (row === undefined) throw new Error(`no schedule ${name}`)
    return row
  })

/** `n` passes at once, as `n` workers would run them at the same slot. */
const race = (n: number) =>
  Effect.map(
    Effect.all(Array.from({ length: n }, () => Schedules.enqueueDue), { concurrency: "unbounded" }),
    (passes) => passes.flat().filter((o) => o._tag === "Enqueued")
  )

/**
 * An hourly schedule with `catchUp`: its slot at T0 enqueued by the first of two racing passes,
 * then three and a half hours with no worker; `effect` runs at T0 + 3 h 30 min.
 */
const afterDowntime = <A, E, R>(catchUp: "once" | "skip", effect: Effect.Effect<A, E, R>) =>
  withJobs(
    [scheduled("hourly", "0 * * * *", catchUp)],
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      expect(yield* race(2)).toMatchObject([{ slot: T0 }])
      yield* TestClock.adjust("3 hours")
      yield* TestClock.adjust("30 minutes")
      return yield* effect
    })
  )

export const scheduleConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "sc"), { timeout: 180_000 })(`Recurring jobs conformance on ${adapter}`, (it) => {
    it.effect("five workers racing at each of four slots enqueue one job per slot, run_at = the slot", () => {
      const Every10s = scheduled("every10s", "*/10 * * * * *")
      return withJobs(
        [Every10s],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          for (let k = 0; k < 4; k++) {
            if (k > 0) yield* TestClock.adjust("10 seconds")
            const enqueued = yield* race(5)
            expect(enqueued).toHaveLength(1)
            expect(enqueued[0]).toMatchObject({ name: "every10s", slot: T0 + k * 10 * SECOND })
            // a pass later in the same slot finds it handled
            expect(yield* Schedules.enqueueDue).toEqual([Schedules.ScheduleOutcome.NotDue({ name: "every10s" })])
          }
          const jobs = yield* jobsOf("every10s")
          expect(jobs.map((j) => j.runAt)).toEqual([0, 1, 2, 3].map((k) => T0 + k * 10 * SECOND))
          expect(jobs.map((j) => JSON.parse(j.payload))).toEqual(Array(4).fill({ label: "every10s" }))
          expect(yield* rowOf("every10s")).toMatchObject({
            cron: "*/10 * * * * *",
            timeZone: "UTC",
            catchUp: "once",
            lastSlot: T0 + 30 * SECOND,
            nextSlot: T0 + 40 * SECOND,
            createdAt: T0
          })
        })
      )
    })

    it.effect("an app that only ticks gets its recurring jobs: two ticks at each slot enqueue it once and run it once", () => {
      const Every10s = scheduled("every10s", "*/10 * * * * *")
      return withJobs(
        [Every10s],
        withLog(Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          for (let k = 0; k < 3; k++) {
            if (k > 0) yield* TestClock.adjust("10 seconds")
            const ticks = yield* Effect.all([Worker.tick({ host: "a" }), Worker.tick({ host: "b" })], {
              concurrency: "unbounded"
            })
            expect(ticks.map((t) => t.scheduled).sort()).toEqual([0, 1])
            expect(ticks[0]!.processed + ticks[1]!.processed).toBe(1)
          }
          expect((yield* jobsOf("every10s")).map((j) => [j.runAt, j.status])).toEqual(
            [0, 1, 2].map((k) => [T0 + k * 10 * SECOND, "completed"])
          )
          expect(yield* Effect.flatMap(RunLog, Ref.get)).toHaveLength(3)
          // a tick later in the same slot enqueues nothing
          expect(yield* Worker.tick({ host: "a" })).toMatchObject({ scheduled: 0, processed: 0 })
        }))
      )
    })

    it.effect("three long-running workers on the TestClock: one run per slot over six slots", () => {
      const Every10s = scheduled("every10s", "*/10 * * * * *")
      return withJobs(
        [Every10s],
        withLog(Effect.gen(function*() {
          yield* TestClock.setTime(T0 + 5 * SECOND)
          const workers = yield* Effect.forEach(
            ["w1", "w2", "w3"],
            // a long poll: an enqueue in this process wakes the workers at once (as one elsewhere would not)
            (host) => startWorker({ host, concurrency: 2, pollInterval: "7 seconds" })
          )
          // registered at T0 + 5 s: the slot at T0 came before, so the first one is T0 + 10 s
          yield* eventually(Effect.map(Schedules.list, (rows) => rows.length === 1))
          for (let k = 1; k <= 6; k++) {
            yield* TestClock.adjust("5 seconds")
            yield* TestClock.adjust("5 seconds")
            yield* eventually(Effect.map(Effect.flatMap(RunLog, Ref.get), (log) => log.length >= k))
          }
          // every worker's scheduler has seen the last slot: nothing more comes of it
          yield* eventually(
            Effect.map(TestClock.sleeps(), (s) => [...s].filter((t) => t === T0 + 70 * SECOND).length >= 3)
          )
          for (const w of workers) yield* Scope.close(w.scope, Exit.void)
          const jobs = yield* jobsOf("every10s")
          expect(jobs.map((j) => j.runAt)).toEqual([1, 2, 3, 4, 5, 6].map((k) => T0 + k * 10 * SECOND))
          expect(jobs.every((j) => j.status === "completed")).toBe(true)
          expect((yield* Effect.flatMap(RunLog, Ref.get)).length).toBe(6)
        }))
      )
    })

    it.effect("catchUp \"once\": after three hours down, the latest missed slot runs once, then the next on time", () =>
      afterDowntime(
        "once",
        Effect.gen(function*() {
          expect(yield* race(3)).toMatchObject([{ slot: T0 + 3 * HOUR }])
          expect(yield* race(3)).toEqual([])
          yield* TestClock.adjust("30 minutes")
          expect(yield* race(3)).toMatchObject([{ slot: T0 + 4 * HOUR }])
          expect((yield* jobsOf("hourly")).map((j) => j.runAt)).toEqual([T0, T0 + 3 * HOUR, T0 + 4 * HOUR])
        })
      ))

    it.effect("catchUp \"skip\": a slot seen over a minute late is skipped; one seen within a minute runs", () =>
      afterDowntime(
        "skip",
        Effect.gen(function*() {
          expect(yield* Schedules.enqueueDue).toEqual([
            Schedules.ScheduleOutcome.Skipped({ name: "hourly", slot: T0 + 3 * HOUR })
          ])
          expect(yield* rowOf("hourly")).toMatchObject({ lastSlot: T0 + 3 * HOUR, nextSlot: T0 + 4 * HOUR })
          // 59 s late is still on time
          yield* TestClock.adjust("30 minutes")
          yield* TestClock.adjust("59 seconds")
          expect(yield* race(3)).toMatchObject([{ slot: T0 + 4 * HOUR }])
          expect((yield* jobsOf("hourly")).map((j) => j.runAt)).toEqual([T0, T0 + 4 * HOUR])
        })
      ))

    it.effect("a changed definition rewrites the row and keeps its last slot; a time zone moves the slots", () => {
      const Before = scheduled("report", "0 3 * * *")
      // 03:00 in Paris is 01:00 UTC in June
      const After = define({
        name: "report",
        schema: Schema.Struct({ label: Schema.String }),
        schedule: { cron: "0 3 * * *", timeZone: "Europe/Paris", catchUp: "skip", payload: { label: "paris" } },
        perform: () => Effect.void
      })
      return withJobs(
        [Before],
        Effect.gen(function*() {
          // registered at 02:00 UTC: 03:00 UTC is its first slot
          yield* TestClock.setTime(T0 + 2 * HOUR)
          expect(yield* Schedules.enqueueDue).toMatchObject([{ _tag: "NotDue" }])
          expect(yield* rowOf("report")).toMatchObject({ lastSlot: null, nextSlot: T0 + 3 * HOUR })
          yield* TestClock.adjust("1 hour")
          expect(yield* Schedules.enqueueDue).toMatchObject([{ _tag: "Enqueued", slot: T0 + 3 * HOUR }])
          // the app is redeployed with the new definition, the next day at 00:30 UTC
          yield* TestClock.setTime(T0 + 24 * HOUR + 30 * 60 * SECOND)
          const redeployed = Effect.provide(Schedules.enqueueDue, jobsLayer(After))
          expect(yield* redeployed).toMatchObject([{ _tag: "NotDue" }])
          expect(yield* rowOf("report")).toMatchObject({
            cron: "0 3 * * *",
            timeZone: "Europe/Paris",
            catchUp: "skip",
            lastSlot: T0 + 3 * HOUR,
            nextSlot: T0 + 25 * HOUR
          })
          yield* TestClock.adjust("30 minutes")
          expect(yield* redeployed).toMatchObject([{ _tag: "Enqueued", slot: T0 + 25 * HOUR }])
          const jobs = yield* jobsOf("report")
          expect(jobs.map((j) => [j.runAt, JSON.parse(j.payload).label])).toEqual([
            [T0 + 3 * HOUR, "report"],
            [T0 + 25 * HOUR, "paris"]
          ])
        })
      )
    })
  })
