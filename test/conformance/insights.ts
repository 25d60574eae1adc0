/**
 * JobInsights conformance (src/ports/JobInsights.ts, the dashboard's reads): pages of jobs newest
 * first by keyset, ties by id, with filters; completions and deaths per minute; the oldest due
 * job. Every adapter must agree with the memory model.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { MINUTE_MS, newestFirst } from "../../src/core/browse.ts"
import type { JobRow, Outcome } from "../../src/core/model.ts"
import { JobStore } from "../../src/JobStore.ts"
import { type JobCursor, JobInsights } from "../../src/ports/JobInsights.ts"
import { type AdapterName, layerFor, TestDatabase } from "../support/databases.ts"

const T0 = 1_791_039_600_000 // a whole minute

/** Runs `effect` with the store and the insights on the suite's shared tables, emptied. */
const withInsights = <A, E>(effect: Effect.Effect<A, E, JobStore | JobInsights>) =>
  Effect.gen(function*() {
    const db = yield* TestDatabase
    const prefix = yield* db.sharedJobTables
    yield* db.clearJobTables(prefix)
    return yield* Effect.provide(effect, Layer.merge(db.storeLayer(prefix), db.insightsLayer(prefix)))
  })

const insert = (id: string, createdAt: number, extra: { name?: string; queue?: string; runAt?: number } = {}) =>
  Effect.flatMap(JobStore, (s) =>
    s.insert({
      id,
      name: extra.name ?? "a",
      queue: extra.queue ?? "default",
      payload: "{}",
      priority: 0,
      maxRetries: 0,
      claimTimeout: 60,
      uniqueKey: id,
      runAt: extra.runAt ?? createdAt,
      now: createdAt
    }))

/** Inserts a job and ends its one attempt at `endAt` with `outcome`. */
const finished = (id: string, at: number, endAt: number, outcome: Outcome) =>
  Effect.gen(function*() {
    const store = yield* JobStore
    yield* insert(id, at)
    const claimed = yield* store.claim({
      queues: undefined,
      host: "h",
      now: at,
      claimToken: `t-${id}`,
      timeoutCap: undefined,
      hostCap: undefined
    })
    expect(claimed._tag === "Claimed" && claimed.job.id).toBe(id)
    yield* store.finish({ id, token: `t-${id}`, now: endAt, outcome })
  })

/** Every page of `limit` rows, walked by cursor from the first. */
const walk = (limit: number, filter: { status?: "pending"; queue?: string; name?: string } = {}) =>
  Effect.gen(function*() {
    const insights = yield* JobInsights
    const pages: Array<ReadonlyArray<string>> = []
    let after: JobCursor | undefined
    for (;;) {
      const rows: ReadonlyArray<JobRow> = yield* insights.page({ ...filter, after, limit })
      if (rows.length === 0) return pages
      pages.push(rows.map((r) => r.id))
      const last = rows[rows.length - 1]!
      after = { createdAt: last.createdAt, id: last.id }
    }
  })

export const insightsConformance = (adapter: AdapterName) =>
  layer(layerFor(adapter, "in"), { timeout: 120_000 })(`JobInsights conformance on ${adapter}`, (it) => {
    it.effect("pages go newest first, ties by id descending, and the cursor walks them without a gap or a repeat", () =>
      withInsights(Effect.gen(function*() {
        // Three rows share a creation time: the id orders them.
        const rows = [["j1", T0], ["j2", T0 + 5], ["j3", T0 + 5], ["j4", T0 + 5], ["j5", T0 + 9], [
          "j6",
          T0 + 1
        ]] as const
        for (const [id, at] of rows) yield* insert(id, at, { queue: id === "j3" || id === "j5" ? "q" : "default" })
        const order = rows.map(([id, createdAt]) => ({ id, createdAt })).sort(newestFirst).map((r) => r.id)
        expect(order).toEqual(["j5", "j4", "j3", "j2", "j6", "j1"])
        expect(yield* walk(2)).toEqual([["j5", "j4"], ["j3", "j2"], ["j6", "j1"]])
        expect((yield* walk(4)).flat()).toEqual(order)
        expect(yield* walk(10, { queue: "q" })).toEqual([["j5", "j3"]])
        expect(yield* walk(10, { status: "pending", name: "b" })).toEqual([])
      })))

    it.effect("activity counts completions and deaths per minute since the given minute", () =>
      withInsights(Effect.gen(function*() {
        yield* finished("old", T0 - MINUTE_MS, T0 - 1, { _tag: "Complete" })
        yield* finished("c1", T0, T0 + 1000, { _tag: "Complete" })
        yield* finished("c2", T0, T0 + MINUTE_MS - 1, { _tag: "Complete" })
        yield* finished("d1", T0, T0 + 30_000, { _tag: "Kill", error: "boom" })
        yield* finished("c3", T0, T0 + 2 * MINUTE_MS + 5, { _tag: "Complete" })
        yield* finished("d2", T0, T0 + 3 * MINUTE_MS, { _tag: "Kill", error: "boom" })
        // Retried (back to pending) is neither.
        yield* finished("r1", T0, T0 + 4 * MINUTE_MS, { _tag: "Retry", runAt: T0 + 5 * MINUTE_MS, error: "again" })
        const insights = yield* JobInsights
        expect(yield* insights.activity(T0)).toEqual([
          { minute: T0, completed: 2, failed: 1 },
          { minute: T0 + 2 * MINUTE_MS, completed: 1, failed: 0 },
          { minute: T0 + 3 * MINUTE_MS, completed: 0, failed: 1 }
        ])
        expect(yield* insights.activity(T0 + 3 * MINUTE_MS)).toEqual([{
          minute: T0 + 3 * MINUTE_MS,
          completed: 0,
          failed: 1
        }])
      })))

    it.effect("the oldest due job is the pending one due longest; later and running ones do not count", () =>
      withInsights(Effect.gen(function*() {
        const insights = yield* JobInsights
        expect(yield* insights.oldestDue(T0)).toEqual(Option.none())
        yield* insert("later", T0, { runAt: T0 + 60_000 })
        expect(yield* insights.oldestDue(T0)).toEqual(Option.none())
        yield* insert("due1", T0 - 10_000, { runAt: T0 - 5_000 })
        yield* insert("due2", T0 - 20_000, { runAt: T0 - 2_000 })
        expect(yield* insights.oldestDue(T0)).toEqual(Option.some(T0 - 5_000))
        expect(yield* insights.oldestDue(T0 + 60_000)).toEqual(Option.some(T0 - 5_000))
      })))
  })
