/**
 * The SQL JobStore's attempts kept alive and reaped: a heartbeat moves an attempt's deadline on,
 * `stale` reads the attempts past theirs, and `reap` ends one as core's reap decision says.
 */
import { Effect } from "effect"
import { isStale } from "../../../core/jobs.ts"
import type { JobStoreApi } from "../../../ports/JobStore.ts"
import type { StoreRunner } from "./runner.ts"

/** The SQL JobStore's `heartbeat`, `stale` and `reap` over `runner`. */
export const makeReaping = (runner: StoreRunner): Pick<JobStoreApi, "heartbeat" | "stale" | "reap"> => {
  const { guardedWrite, jobs, statements } = runner
  return {
    heartbeat: (id, token, now, staleAt) => guardedWrite("heartbeat", statements.heartbeat(id, token, now, staleAt)),
    // Rows past their deadline, then rows without one that core's isStale judges stale (read
    // apart, so live ones of those never crowd the others out of the limit).
    stale: (now, limit) =>
      Effect.zipWith(
        jobs(statements.stale(now, limit)),
        jobs(statements.withoutDeadline(limit)),
        (past, unknown) => [...past, ...unknown.filter((r) => isStale(r, now))].slice(0, limit)
      ),
    reap: (row, decision, now) => guardedWrite("reap", statements.reap(row, decision, now))
  }
}
