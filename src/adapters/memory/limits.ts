/**
 * The in-memory JobStore's limits changed live, the model of ../sql/jobStore/limits.ts: the
 * limits table read whole, a row changed or cleared, and the jobs a lifted pause held woken.
 */
import { Effect } from "effect"
import { applyLimitChange, type LimitRow, pausedWaitName } from "../../core/limits.ts"
import type { JobRow } from "../../core/model.ts"
import type { TableNames } from "../../core/tables.ts"
import type { JobStoreApi } from "../../ports/JobStore.ts"
import * as LocalWakeups from "../localWakeups.ts"
import { type MemoryDatabaseApi, modifyTable } from "./database.ts"
import type { TableUpdate } from "./jobTables.ts"

const keyOf = (scope: string, target: string) => `${scope}\u0000${target}`

/** The memory JobStore's `limits`, `changeLimit` and `clearLimit`. */
export const memoryLimits = (
  db: MemoryDatabaseApi,
  tables: TableNames,
  jobsTable: TableUpdate<JobRow>
): Pick<JobStoreApi, "limits" | "changeLimit" | "clearLimit"> => {
  const limitsTable: TableUpdate<LimitRow> = (f) => modifyTable(db, tables.limits, f)
  // As ../sql/limitStatements.ts `wake`: every pending job waiting on the pause due now.
  const wake = (row: LimitRow, now: number) => {
    const name = pausedWaitName(row.scope, row.target)
    const woken = jobsTable((rows) => {
      const next = new Map(rows)
      let n = 0
      for (const [id, job] of rows) {
        if (job.status === "pending" && job.leaseName === name) {
          next.set(id, { ...job, runAt: Math.min(job.runAt, now), leaseName: null })
          n++
        }
      }
      return [n, next]
    })
    return Effect.flatMap(woken, (n) => (n > 0 ? LocalWakeups.ring(tables.channel) : Effect.void))
  }
  return {
    limits: limitsTable((rows) => [
      [...rows.values()].sort((a, b) =>
        a.scope === b.scope ? (a.target < b.target ? -1 : a.target > b.target ? 1 : 0) : a.scope < b.scope ? -1 : 1
      )
    ]),
    changeLimit: (change, now) =>
      Effect.gen(function*() {
        const key = keyOf(change.scope, change.target.trim())
        const [before, row] = yield* limitsTable((rows) => {
          const current = rows.get(key)
          const next = applyLimitChange(current, change, now)
          return [[current, next] as const, new Map(rows).set(key, next)]
        })
        if (before?.paused === true && !row.paused) yield* wake(before, now)
        return row
      }),
    clearLimit: (scope, target, now) =>
      Effect.gen(function*() {
        const key = keyOf(scope, target.trim())
        const removed = yield* limitsTable((rows) => {
          const current = rows.get(key)
          if (current === undefined) return [undefined]
          const next = new Map(rows)
          next.delete(key)
          return [current, next]
        })
        if (removed === undefined) return false
        if (removed.paused) yield* wake(removed, now)
        return true
      })
  }
}
