/** What `jobs list | stats | retry | purge` do (declared in ../commands/jobs.ts, loaded only to run). */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { JobStatus } from "../../core/jobs.ts"
import type { JobRow } from "../../core/model.ts"
import { JobStore } from "../../ports/JobStore.ts"
import { withStore } from "../database.ts"
import { CliError, iso, print, table } from "../format.ts"
import type { Common } from "../options.ts"

/** A job row as JSON: its times as ISO-8601 (or null), everything else as stored. */
export const jobJson = (r: JobRow) => ({
  ...r,
  runAt: iso(r.runAt),
  heartbeatAt: iso(r.heartbeatAt),
  staleAt: iso(r.staleAt),
  completedAt: iso(r.completedAt),
  failedAt: iso(r.failedAt),
  createdAt: iso(r.createdAt),
  updatedAt: iso(r.updatedAt)
})

/** The values of `jobs list`. */
export interface ListConfig extends Common {
  readonly status: Option.Option<JobStatus>
  readonly queue: Option.Option<string>
  readonly name: Option.Option<string>
  readonly limit: number
}

/** `jobs list`: newest rows first, as a table or JSON. */
export const list = (c: ListConfig) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const rows = yield* (yield* JobStore).list({
        status: Option.getOrUndefined(c.status),
        queue: Option.getOrUndefined(c.queue),
        name: Option.getOrUndefined(c.name),
        limit: c.limit
      })
      yield* print(c, rows.map(jobJson), (width) =>
        table(
          rows.map((r) => ({ ...r, runAt: iso(r.runAt) })),
          ["id", "name", "queue", "status", "attempts", "priority", "runAt", "claimedBy", "lastError"],
          { keep: ["id"], width }
        ))
    })
  )

/** `jobs stats`: counts per queue and status. */
export const stats = (c: Common) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const counts = yield* (yield* JobStore).counts
      yield* print(c, counts, (width) => table(counts, ["queue", "status", "count"], { width }))
    })
  )

/** The values of `jobs retry`. */
export interface RetryConfig extends Common {
  readonly id: string
}

/** `jobs retry`: only a dead job (failed or interrupted) goes back to pending; anything else is an error line. */
export const retry = (c: RetryConfig) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const ok = yield* (yield* JobStore).retryDead(c.id, now)
      if (!ok) return yield* new CliError({ message: `no failed or interrupted job with id ${c.id}` })
      yield* print(c, { id: c.id, status: "pending" }, () => `job ${c.id} is pending again`)
    })
  )

/** The values of `jobs purge`. */
export interface PurgeConfig extends Common {
  readonly status: "completed" | "failed" | "interrupted"
  readonly olderThan: number
}

/** `jobs purge`: deletes finished jobs of one status older than `--older-than`. */
export const purge = (c: PurgeConfig) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const n = yield* (yield* JobStore).purge(c.status, now - c.olderThan)
      yield* print(
        c,
        { purged: n },
        () => `purged ${n} ${c.status} job(s) older than ${Duration.format(Duration.millis(c.olderThan))}`
      )
    })
  )
