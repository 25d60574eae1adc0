/** What `jobs list | show | why | stats | retry | discard | cancel | purge` do (declared in ../commands/jobs.ts, loaded only to run). */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Explanation } from "../../core/explainReason.ts"
import type { JobStatus } from "../../core/jobs.ts"
import type { EndedStatus, JobRow } from "../../core/model.ts"
import { JobStore } from "../../ports/JobStore.ts"
import { type DeadJobsFilter, discardDead, retryDead } from "../../runtime/deadJobs.ts"
import * as Cancel from "../../runtime/cancel.ts"
import { explain } from "../../runtime/explain.ts"
import { type Jobs, jobsLayer } from "../../runtime/Job.ts"
import { withStore } from "../database.ts"
import { CliError, iso, print, table } from "../format.ts"
import { loadJobs } from "../jobModule.ts"
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
  updatedAt: iso(r.updatedAt),
  history: r.history.map((h) => ({ ...h, startedAt: iso(h.startedAt), endedAt: iso(h.endedAt) }))
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
          rows.map((r) => ({ ...r, runAt: iso(r.runAt), claimedBy: claimedBy(r) })),
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

/**
 * The host a job's claim names while it is processing; null otherwise. A job back to pending (a
 * retry, a hand-back) keeps the columns of its last attempt, whose host its history shows.
 */
const claimedBy = (r: JobRow): string | null => (r.status === "processing" ? r.claimedBy : null)

/**
 * The attempt a processing job is running, as a row of `jobs show`'s attempts table: its number,
 * when it was claimed and the host that claimed it (the columns src/core/history.ts
 * `attemptRecord` records when it ends); none for a job that is not processing.
 */
const runningAttempt = (r: JobRow): ReadonlyArray<Record<string, unknown>> =>
  r.status !== "processing" ? [] : [{
    attempt: r.attempts,
    startedAt: iso(r.updatedAt),
    endedAt: null,
    outcome: "running",
    host: r.claimedBy,
    error: null
  }]

/** The values of `jobs show`. */
export interface ShowConfig extends Common {
  readonly id: string
}

/**
 * `jobs show`: one job's fields, then its attempts, oldest first: the ended ones its history
 * keeps, then the running one of a processing job. The claim (host and token) is shown only
 * while the job is processing; `--json` prints the row as stored.
 */
export const show = (c: ShowConfig) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const found = yield* (yield* JobStore).get(c.id)
      if (Option.isNone(found)) return yield* new CliError({ message: `no job with id ${c.id}` })
      const r = found.value
      const j = jobJson(r)
      yield* print(c, j, (width) => {
        const shown = { ...j, claimedBy: claimedBy(r), claimToken: claimedBy(r) === null ? null : r.claimToken }
        const fields = Object.entries(shown).filter(([k]) => k !== "history" && k !== "payload")
        const label = Math.max(...fields.map(([k]) => k.length))
        const attempts = [...j.history, ...runningAttempt(r)]
        return [
          ...fields.map(([k, v]) => `${k.padEnd(label)}  ${v === null ? "-" : String(v)}`),
          `${"payload".padEnd(label)}  ${r.payload}`,
          "",
          `attempts (last ${attempts.length}):`,
          table(attempts, ["attempt", "startedAt", "endedAt", "outcome", "host", "error"], { width })
        ].join("\n")
      })
    })
  )

/** The values of `jobs why`. */
export interface WhyConfig extends Common {
  readonly id: string
  readonly jobs: Option.Option<string>
}

/** The fields of an explanation that are times (epoch ms), printed as ISO-8601 in JSON. */
const TIMES = new Set(["at", "runAt", "dueSince", "since", "heartbeatAt", "nextFreeAt", "expiresAt"])

/** `value` with its time fields (and those of the objects in it) as ISO-8601. */
const withIsoTimes = (value: object): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      TIMES.has(k) && typeof v === "number" ? iso(v) : v !== null && typeof v === "object" && !Array.isArray(v)
        ? withIsoTimes(v)
        : v
    ])
  )

/**
 * `jobs why`: the sentence of `Job.explain` (`--json`: the explanation, its times as ISO-8601).
 * With `--jobs` (or `LEASEHOLD_JOBS`) the module's job types give the slot counts of keys, caps
 * and rate limits. An id that names no job is an error line.
 */
export const why = (c: WhyConfig) =>
  Effect.gen(function*() {
    const types = Option.isSome(c.jobs) ? yield* loadJobs(c.jobs.value) : []
    const explained: Explanation = yield* withStore(
      c,
      { create: false },
      Effect.provide(explain(c.id), jobsLayer(...types) as Layer.Layer<Jobs>)
    )
    yield* print(c, withIsoTimes(explained), () => explained.message)
  })

/** The values of `jobs retry` and `jobs discard`. */
export interface DeadConfig extends Common {
  readonly id: Option.Option<string>
  readonly name: Option.Option<string>
  readonly queue: Option.Option<string>
  readonly status: Option.Option<EndedStatus>
  readonly olderThan: Option.Option<number>
  readonly all: boolean
}

// The filter the options give; with neither an id nor a filter, --all is required, so a bare
// `jobs discard` never deletes every dead job by accident.
const deadFilter = (c: DeadConfig): Effect.Effect<DeadJobsFilter, CliError> => {
  const filter: DeadJobsFilter = {
    ids: Option.match(c.id, { onNone: () => undefined, onSome: (id) => [id] }),
    name: Option.getOrUndefined(c.name),
    queue: Option.getOrUndefined(c.queue),
    status: Option.getOrUndefined(c.status),
    olderThan: Option.getOrUndefined(c.olderThan)
  }
  return Object.values(filter).every((v) => v === undefined) && !c.all
    ? Effect.fail(
      new CliError({ message: "give a job id, a filter (--name, --queue, --status, --older-than) or --all" })
    )
    : Effect.succeed(filter)
}

// What `jobs retry ID` and `jobs discard ID` say when the job is not one they take.
const NOT_ENDED = "no failed, interrupted or cancelled job with id"

/**
 * `jobs retry`: dead jobs (failed or interrupted) back to pending, and cancelled ones given by id
 * or `--status cancelled`. With an id, a job that is neither (or does not match) is an error line.
 */
export const retry = (c: DeadConfig) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const n = yield* retryDead(yield* deadFilter(c))
      if (Option.isSome(c.id)) {
        const id = c.id.value
        if (n === 0) return yield* new CliError({ message: `${NOT_ENDED} ${id}` })
        return yield* print(c, { id, status: "pending" }, () => `job ${id} is pending again`)
      }
      yield* print(c, { retried: n }, () => `${n} job(s) pending again`)
    })
  )

/**
 * `jobs discard`: deletes dead jobs, and cancelled ones as `jobs retry` takes them. With an id, a
 * job that is neither (or does not match) is an error line.
 */
export const discard = (c: DeadConfig) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const n = yield* discardDead(yield* deadFilter(c))
      if (Option.isSome(c.id) && n === 0) {
        return yield* new CliError({ message: `${NOT_ENDED} ${c.id.value}` })
      }
      yield* print(c, { discarded: n }, () => `discarded ${n} job(s)`)
    })
  )

/** The values of `jobs cancel`. */
export interface CancelConfig extends Common {
  readonly id: Option.Option<string>
  readonly name: Option.Option<string>
  readonly queue: Option.Option<string>
  readonly status: Option.Option<"pending" | "processing">
}

/**
 * `jobs cancel`: one job by id, or with filters every unfinished job they match (../../runtime/cancel.ts).
 * A finished job, an unknown id or a filter that cannot work is an error line and changes nothing.
 */
export const cancel = (c: CancelConfig) =>
  withStore(
    c,
    { create: false },
    Effect.gen(function*() {
      const filter = {
        name: Option.getOrUndefined(c.name),
        queue: Option.getOrUndefined(c.queue),
        status: Option.getOrUndefined(c.status)
      }
      if (Option.isSome(c.id)) {
        if (Object.values(filter).some((v) => v !== undefined)) {
          return yield* new CliError({ message: "give a job id or --name/--queue/--status, not both" })
        }
        const done = yield* Cancel.cancel(c.id.value)
        return yield* print(
          c,
          done,
          () =>
            done.wasRunning
              ? `job ${done.id} is cancelled; its running attempt stops at its next heartbeat`
              : `job ${done.id} is cancelled`
        )
      }
      // Checked here so that the line names the command's own options.
      if (Object.values(filter).every((v) => v === undefined)) {
        return yield* new CliError({ message: "give a job id, or at least one of --name, --queue, --status" })
      }
      const done = yield* Cancel.cancelWhere(filter)
      yield* print(c, done, () => `cancelled ${done.cancelled} job(s)`)
    })
  )

/** The values of `jobs purge`. */
export interface PurgeConfig extends Common {
  readonly status: "completed" | "failed" | "interrupted" | "cancelled"
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
