/**
 * Batch enqueue and unique-key scopes (docs/behaviour.md §4): `enqueueMany` writes every job in
 * one transaction, one INSERT per chunk, honours unique keys per job and reports the
 * duplicates, joins the caller's transaction, and checks everything before writing anything; a
 * key held `uniqueUntil: "finished"` is free again once its job completed or died. Every
 * adapter must pass all of it.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Option, Schema, TestClock } from "effect"
import { JobStore } from "../../src/JobStore.ts"
import { define, enqueue, enqueueMany } from "../../src/runtime/Job.ts"
import { processNext } from "../../src/runtime/Worker.ts"
import { type AdapterName, layerFor, TestDatabase } from "../support/databases.ts"
import { Ok, Payload, RunLog, withJobs } from "../support/jobs.ts"
import { Ref } from "effect"

const T0 = 1_791_039_632_175

/** A job that fails once and is dead (no retries). */
const Dies = define({ name: "dies", schema: Payload, maxRetries: 0, perform: () => Effect.fail("no") })

const row = (id: string) => Effect.flatMap(JobStore, (s) => Effect.map(s.get(id), Option.getOrThrow))
const allRows = Effect.flatMap(JobStore, (s) => s.list({ limit: 100_000 }))
const countRows = Effect.map(allRows, (r) => r.length)
const quiet = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    Ref.make<ReadonlyArray<{ id: string; n: number; attempt: number }>>([]),
    (log) => Effect.provideService(effect, RunLog, log)
  )

export const enqueueConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "enq"), { timeout: 180_000 })(`Batch enqueue and unique scopes on ${adapter}`, (it) => {
    it.effect("enqueueMany writes one pending job per payload, in order, with the options, across chunks", () =>
      withJobs(
        [Ok],
        Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const n = 2_345 // three INSERTs of at most 1,000 rows
          const payloads = Array.from({ length: n }, (_, i) => ({ n: i }))
          const result = yield* enqueueMany(Ok, payloads, { queue: "bulk", priority: 7, delay: "1 minute" })
          expect(result.inserted).toBe(n)
          expect(result.duplicates).toEqual([])
          expect(result.jobs).toHaveLength(n)
          expect(result.jobs.every((j) => j.status === "pending" && !j.duplicate)).toBe(true)
          expect(new Set(result.jobs.map((j) => j.id)).size).toBe(n)
          const rows = yield* allRows
          expect(rows).toHaveLength(n)
          const byId = new Map(rows.map((r) => [r.id, r]))
          result.jobs.forEach((j, i) => {
            const r = byId.get(j.id)!
            expect(JSON.parse(r.payload)).toEqual({ n: i })
            expect(r).toMatchObject({
              name: "ok",
              queue: "bulk",
              priority: 7,
              status: "pending",
              attempts: 0,
              uniqueKey: j.id,
              uniqueUntil: "purged",
              runAt: T0 + 60_000,
              createdAt: T0
            })
          })
          expect(yield* enqueueMany(Ok, [])).toEqual({ jobs: [], inserted: 0, duplicates: [] })
          expect(yield* countRows).toBe(n)
        })
      ))

    it.effect("enqueueMany honours unique keys per job: taken keys and repeats within the call are reported", () =>
      withJobs(
        [Ok],
        Effect.gen(function*() {
          const held = yield* enqueue(Ok, { n: 0 }, { uniqueKey: "k1" })
          const payloads = [{ n: 1, key: "k1" }, { n: 2, key: "k2" }, { n: 3 }, { n: 4, key: "k2" }, {
            n: 5,
            key: "k3"
          }]
          const result = yield* enqueueMany(Ok, payloads, { uniqueKey: (p) => p.key })
          expect(result.inserted).toBe(3)
          const [a, b, c, d, e] = result.jobs
          expect(a).toEqual({ id: held.id, status: "duplicate", duplicate: true })
          expect(b).toMatchObject({ status: "pending", duplicate: false })
          expect(c).toMatchObject({ status: "pending", duplicate: false })
          expect(d).toEqual({ id: b!.id, status: "duplicate", duplicate: true })
          expect(e).toMatchObject({ status: "pending", duplicate: false })
          expect(result.duplicates).toEqual([
            { index: 0, uniqueKey: "k1", id: held.id },
            { index: 3, uniqueKey: "k2", id: b!.id }
          ])
          expect(yield* countRows).toBe(4)
          expect(JSON.parse((yield* row(b!.id)).payload)).toEqual({ n: 2, key: "k2" })
          expect((yield* row(c!.id)).uniqueKey).toBe(c!.id)
        })
      ))

    it.effect("two enqueueMany racing over the same keys, in opposite orders: one job per key, the rest duplicates", () =>
      withJobs(
        [Ok],
        Effect.gen(function*() {
          const keys = Array.from({ length: 60 }, (_, i) => ({ n: i, key: `race-${i}` }))
          const [one, two] = yield* Effect.all([
            enqueueMany(Ok, keys, { uniqueKey: (p) => p.key }),
            enqueueMany(Ok, [...keys].reverse(), { uniqueKey: (p) => p.key })
          ], { concurrency: "unbounded" })
          expect(one!.inserted + two!.inserted).toBe(60)
          expect(one!.duplicates.length + two!.duplicates.length).toBe(60)
          const rows = yield* allRows
          expect(rows).toHaveLength(60)
          const idOfKey = new Map(rows.map((r) => [r.uniqueKey, r.id]))
          keys.forEach((p, i) => {
            expect(one!.jobs[i]!.id).toBe(idOfKey.get(p.key))
            expect(two!.jobs[59 - i]!.id).toBe(idOfKey.get(p.key))
          })
        })
      ))

    it.effect("enqueueMany inside the caller's transaction joins it: rolled back with it, kept when it commits", () =>
      withJobs(
        [Ok],
        Effect.gen(function*() {
          const db = yield* TestDatabase
          const payloads = Array.from({ length: 1_200 }, (_, i) => ({ n: i, key: `tx-${i}` }))
          const failed = yield* db.withTransaction(Effect.gen(function*() {
            yield* enqueueMany(Ok, payloads, { uniqueKey: (p) => p.key })
            return yield* Effect.fail("app error" as const)
          })).pipe(Effect.flip)
          expect(failed).toBe("app error")
          expect(yield* countRows).toBe(0)
          const committed = yield* db.withTransaction(enqueueMany(Ok, payloads, { uniqueKey: (p) => p.key }))
          expect(committed.inserted).toBe(1_200)
          expect(yield* countRows).toBe(1_200)
        })
      ))

    it.effect("enqueueMany checks every payload and option first: a bad one fails typed, naming it, and writes nothing", () =>
      withJobs(
        [Ok],
        Effect.gen(function*() {
          const good = Array.from({ length: 1_500 }, (_, i) => ({ n: i }))
          const badPayload = yield* Effect.flip(
            enqueueMany(Ok, [...good, { n: "x" } as unknown as { n: number }])
          )
          expect(badPayload).toMatchObject({ _tag: "PayloadError", jobName: "ok" })
          expect(badPayload.message).toContain("payloads[1500]: ")
          const longKey = yield* Effect.flip(
            enqueueMany(Ok, good, { uniqueKey: (_, i) => (i === 1_234 ? "k".repeat(256) : `k${i}`) })
          )
          expect(longKey).toMatchObject({ _tag: "EnqueueInputError", field: "uniqueKey" })
          expect(longKey.message).toContain("payloads[1234]: ")
          const throwing = yield* Effect.flip(enqueueMany(Ok, good, {
            uniqueKey: (_, i) => {
              if (i === 3) throw new Error("no key")
              return undefined
            }
          }))
          expect(throwing).toMatchObject({ _tag: "EnqueueInputError", field: "uniqueKey" })
          expect(throwing.message).toContain("payloads[3]: ")
          expect(yield* Effect.flip(enqueueMany(Ok, good, { priority: 1.5 }))).toMatchObject({ field: "priority" })
          expect(yield* Effect.flip(enqueueMany(Ok, good, { delay: -1 }))).toMatchObject({ field: "delay" })
          expect(
            yield* Effect.flip(enqueueMany(Ok, good, { uniqueUntil: "never" as unknown as "purged" }))
          ).toMatchObject({ field: "uniqueUntil" })
          expect(yield* Effect.flip(enqueueMany(Ok, 5 as unknown as Array<{ n: number }>))).toMatchObject({
            field: "payloads"
          })
          expect(yield* countRows).toBe(0)
        })
      ))

    it.effect("uniqueUntil finished: the key is taken while the job is pending or running, free once it completed or died", () =>
      withJobs(
        [Ok, Dies],
        quiet(Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const first = yield* enqueue(Ok, { n: 1 }, { uniqueKey: "sync", uniqueUntil: "finished" })
          expect((yield* row(first.id)).uniqueUntil).toBe("finished")
          expect(yield* enqueue(Ok, { n: 2 }, { uniqueKey: "sync", uniqueUntil: "finished" })).toEqual({
            id: first.id,
            status: "duplicate",
            duplicate: true
          })
          expect(yield* processNext({ host: "h" })).toMatchObject({ _tag: "Completed", job: { id: first.id } })
          // Completed: a new enqueue takes the key; the finished row keeps its own id as its key.
          const second = yield* enqueue(Ok, { n: 3 }, { uniqueKey: "sync", uniqueUntil: "finished" })
          expect(second).toMatchObject({ status: "pending", duplicate: false })
          expect(second.id).not.toBe(first.id)
          expect(yield* row(first.id)).toMatchObject({ status: "completed", uniqueKey: first.id })
          expect((yield* row(second.id)).uniqueKey).toBe("sync")
          expect(yield* enqueue(Ok, { n: 4 }, { uniqueKey: "sync" })).toMatchObject({ id: second.id, duplicate: true })

          // Dead (retries used up) frees it too, for enqueueMany as for enqueue.
          expect(yield* processNext({ host: "h" })).toMatchObject({ _tag: "Completed", job: { id: second.id } })
          const doomed = yield* enqueue(Dies, { n: 5 }, { uniqueKey: "doomed", uniqueUntil: "finished" })
          expect(yield* processNext({ host: "h" })).toMatchObject({ _tag: "Failed", willRetry: false })
          expect((yield* row(doomed.id)).status).toBe("failed")
          const again = yield* enqueueMany(Dies, [{ n: 6, key: "doomed" }, { n: 7, key: "doomed" }], {
            uniqueKey: (p) => p.key,
            uniqueUntil: "finished"
          })
          expect(again.inserted).toBe(1)
          expect(again.jobs[0]!.id).not.toBe(doomed.id)
          expect(again.duplicates).toEqual([{ index: 1, uniqueKey: "doomed", id: again.jobs[0]!.id }])
          expect((yield* row(doomed.id)).uniqueKey).toBe(doomed.id)
        }))
      ))

    it.effect("the scope is the holder's: a key held until purged stays taken after completion, whatever the newcomer asks", () =>
      withJobs(
        [Ok],
        quiet(Effect.gen(function*() {
          const held = yield* enqueue(Ok, { n: 1 }, { uniqueKey: "report" })
          expect((yield* row(held.id)).uniqueUntil).toBe("purged")
          expect(yield* processNext({ host: "h" })).toMatchObject({ _tag: "Completed" })
          expect(yield* enqueue(Ok, { n: 2 }, { uniqueKey: "report", uniqueUntil: "finished" })).toMatchObject({
            id: held.id,
            duplicate: true
          })
          expect(yield* enqueueMany(Ok, [{ n: 3 }], { uniqueKey: () => "report", uniqueUntil: "finished" }))
            .toMatchObject({ inserted: 0, duplicates: [{ index: 0, uniqueKey: "report", id: held.id }] })
          expect(yield* countRows).toBe(1)
        }))
      ))

    it.effect("a race of enqueuers for a key its finished holder let go: one new job, the others duplicates of it", () =>
      withJobs(
        [Ok],
        quiet(Effect.gen(function*() {
          const old = yield* enqueue(Ok, { n: 0 }, { uniqueKey: "freed", uniqueUntil: "finished" })
          expect(yield* processNext({ host: "h" })).toMatchObject({ _tag: "Completed" })
          const results = yield* Effect.all(
            Array.from({ length: 10 }, (_, n) => enqueue(Ok, { n }, { uniqueKey: "freed", uniqueUntil: "finished" })),
            { concurrency: "unbounded" }
          )
          const winners = results.filter((r) => !r.duplicate)
          expect(winners).toHaveLength(1)
          expect(winners[0]!.id).not.toBe(old.id)
          expect(results.every((r) => r.id === winners[0]!.id)).toBe(true)
          expect(yield* countRows).toBe(2)
        }))
      ))
  })
