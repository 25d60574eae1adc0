/** The in-memory JobInsights (src/ports/JobInsights.ts): the model of the SQL queries. */
import { Effect, Layer, Option } from "effect"
import { isAfterCursor, minuteOf, newestFirst } from "../../core/browse.ts"
import type { JobRow } from "../../core/model.ts"
import { tableNames } from "../../core/tables.ts"
import { type ActivityMinute, JobInsights, type JobInsightsApi } from "../../ports/JobInsights.ts"
import { MemoryDatabase, type MemoryDatabaseApi, modifyTable } from "./database.ts"

/** Builds the in-memory JobInsights on `db` for one prefix. */
export const makeMemoryJobInsights = (
  db: MemoryDatabaseApi,
  options: { readonly prefix?: string | undefined } = {}
): JobInsightsApi => {
  const table = tableNames(options.prefix).jobs
  const read = <A>(f: (rows: ReadonlyArray<JobRow>) => A) =>
    modifyTable<string, JobRow, A>(db, table, (rows) => [f([...rows.values()])])
  return JobInsights.of({
    page: (q) =>
      read((rows) =>
        rows
          .filter((r) =>
            (q.status === undefined || r.status === q.status) && (q.queue === undefined || r.queue === q.queue) &&
            (q.name === undefined || r.name === q.name) && (q.after === undefined || isAfterCursor(r, q.after))
          )
          .sort(newestFirst)
          .slice(0, q.limit)
      ),
    activity: (since) =>
      read((rows) => {
        const minutes = new Map<number, { completed: number; failed: number }>()
        const add = (at: number, key: "completed" | "failed") => {
          const m = minuteOf(at)
          const entry = minutes.get(m) ?? { completed: 0, failed: 0 }
          entry[key]++
          minutes.set(m, entry)
        }
        for (const r of rows) {
          if (r.status === "completed" && r.completedAt !== null && r.completedAt >= since) {
            add(r.completedAt, "completed")
          }
          if ((r.status === "failed" || r.status === "interrupted") && r.failedAt !== null && r.failedAt >= since) {
            add(r.failedAt, "failed")
          }
        }
        return [...minutes.entries()]
          .sort(([a], [b]) => a - b)
          .map(([minute, n]): ActivityMinute => ({ minute, ...n }))
      }),
    oldestDue: (now) =>
      read((rows) => {
        const due = rows.filter((r) => r.status === "pending" && r.runAt <= now).map((r) => r.runAt)
        return due.length === 0 ? Option.none() : Option.some(Math.min(...due))
      })
  })
}

/** A layer providing the in-memory `JobInsights` on the `MemoryDatabase`. */
export const memoryJobInsightsLayer = (
  options: { readonly prefix?: string | undefined } = {}
): Layer.Layer<JobInsights, never, MemoryDatabase> =>
  Layer.effect(JobInsights, Effect.map(MemoryDatabase, (db) => makeMemoryJobInsights(db, options)))
