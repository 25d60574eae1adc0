/**
 * The chaos job types and the history they write.
 *
 * Every perform records a *run* row in the run's history table (same database, its own table
 * `<prefix>chaos_history`): job id, attempt, claim token, the lease it holds (name, owner, expiry
 * as `JobContext.lease` reports it), the worker's Clock reading, and wall-clock start and end.
 * The worker's `onResult` hook adds an *outcome* row per attempt (Completed / Failed / Fenced /
 * Deferred, with `leaseLost`). The checker (check.ts) reads both. Wall-clock times come from
 * `Date.now()`, not the Clock: they are the ground truth, the same for every process on this
 * machine whatever a worker's Clock says.
 */
import { SqlClient } from "@effect/sql"
import { Cause, Clock, Context, Data, Effect, Exit, Layer, Option, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { Fenced, Fences, Job, Worker } from "../../src/index.ts"
import { quoteIdent, retryFor } from "./db.ts"

/** Every job type's timeout, in seconds (workers cap at the same): the lease window is 5 + 60 = 65 s of Clock time. */
export const JOB_TIMEOUT_SECONDS = 5
/** A run longer than this heartbeats. */
export const LONG_RUN_MS = 800
/** Heartbeat spacing (wall clock) of a long run. */
export const BEAT_MS = 250
/** Retries after the first run: a job runs at most 4 times. */
export const MAX_RETRIES = 3

/** The history table of a run's prefix. */
export const historyTable = (prefix: string): string => `${prefix}chaos_history`

/** CREATE TABLE of the history table; the same text works on PostgreSQL, MariaDB and SQLite. */
export const historyDdl = (quoted: string): string =>
  `CREATE TABLE ${quoted} (
  id VARCHAR(64) NOT NULL PRIMARY KEY,
  kind VARCHAR(16) NOT NULL,
  job_id VARCHAR(36) NOT NULL,
  job_name VARCHAR(64) NOT NULL,
  lease_name VARCHAR(100) NULL,
  attempt INT NOT NULL,
  claim_token VARCHAR(36) NULL,
  host VARCHAR(255) NOT NULL,
  pid INT NOT NULL,
  lease_owner VARCHAR(64) NULL,
  lease_expires_at BIGINT NULL,
  clock_ms BIGINT NULL,
  start_ms BIGINT NULL,
  end_ms BIGINT NULL,
  outcome VARCHAR(32) NULL,
  lease_lost INT NULL,
  detail TEXT NULL,
  fence VARCHAR(16) NULL,
  fence_token BIGINT NULL,
  fence_ms BIGINT NULL
)`

/** The fences table of a run's prefix: a keyed run's end is written through `Fences.guard`. */
export const fencesTable = (prefix: string): string => `${prefix}chaos_fences`

/** A history row as written. `kind` "run": one perform; "outcome": one onResult call. */
export interface HistoryRow {
  readonly id: string
  readonly kind: "run" | "outcome"
  readonly jobId: string
  readonly jobName: string
  readonly leaseName: string | null
  readonly attempt: number
  readonly claimToken: string | null
  readonly host: string
  readonly pid: number
  readonly leaseOwner: string | null
  readonly leaseExpiresAt: number | null
  /** The worker's Clock at the start of perform (chaos time, with its skew). */
  readonly clockMs: number | null
  /** Wall clock. */
  readonly startMs: number | null
  /** Wall clock; for an outcome row, when it was reported. */
  readonly endMs: number | null
  /** run: ok | error | fenced | interrupted; outcome: Completed | Failed:retry | Failed:dead | Fenced | Deferred. */
  readonly outcome: string | null
  readonly leaseLost: boolean | null
  readonly detail: string | null
  /**
   * A keyed run's end, written through `Fences.guard` on its lease name with its fencing token:
   * "applied", "refused" (StaleTokenError: written afterwards without the guard) or "error"
   * (the guarded write failed otherwise, say in a server restart; written afterwards). Null
   * for other rows.
   */
  readonly fence?: "applied" | "refused" | "error" | null
  readonly fenceToken?: bigint | null
  /** Wall clock inside the guard's transaction, after the fence row was locked. */
  readonly fenceMs?: number | null
}

/** A guarded end of a run: the lease it held and its fencing token. */
export interface FenceOf {
  readonly resource: string
  readonly token: bigint
}

/** Writes history rows; each write is retried for up to a minute (it must outlive a server restart). */
export interface HistoryApi {
  readonly write: (row: HistoryRow) => Effect.Effect<void>
  /** Records a run's end; with `fence`, through `Fences.guard` (see `HistoryRow.fence`). */
  readonly finish: (
    id: string,
    endMs: number,
    outcome: string,
    detail: string | null,
    fence?: FenceOf
  ) => Effect.Effect<void>
}

/** The history service the chaos job types need. */
export class History extends Context.Tag("chaos/History")<History, HistoryApi>() {}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v))
const str = (v: unknown): string | null => (v === null || v === undefined ? null : String(v))

/** Decodes a history row from any driver (BIGINT may come back as a string). */
export const decodeHistoryRow = (r: Record<string, unknown>): HistoryRow => ({
  id: String(r.id),
  kind: String(r.kind) as HistoryRow["kind"],
  jobId: String(r.job_id),
  jobName: String(r.job_name),
  leaseName: str(r.lease_name),
  attempt: Number(r.attempt),
  claimToken: str(r.claim_token),
  host: String(r.host),
  pid: Number(r.pid),
  leaseOwner: str(r.lease_owner),
  leaseExpiresAt: num(r.lease_expires_at),
  clockMs: num(r.clock_ms),
  startMs: num(r.start_ms),
  endMs: num(r.end_ms),
  outcome: str(r.outcome),
  leaseLost: r.lease_lost === null || r.lease_lost === undefined ? null : Number(r.lease_lost) !== 0,
  detail: str(r.detail),
  fence: str(r.fence) as HistoryRow["fence"],
  fenceToken: r.fence_token === null || r.fence_token === undefined ? null : BigInt(String(r.fence_token)),
  fenceMs: num(r.fence_ms)
})

/** Reads every history row of a prefix. */
export const readHistory = (prefix: string): Effect.Effect<ReadonlyArray<HistoryRow>, unknown, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const rows = yield* sql.unsafe<Record<string, unknown>>(`SELECT * FROM ${quoteIdent(sql, historyTable(prefix))}`)
    return rows.map(decodeHistoryRow)
  })

/** The SQL history over the current SqlClient, for one prefix. Writes that still fail after a minute are logged and dropped. */
export const historyLayer = (prefix: string): Layer.Layer<History, never, SqlClient.SqlClient> =>
  Layer.effect(
    History,
    Effect.gen(function*() {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      const table = quoteIdent(sql, historyTable(prefix))
      const ph = (n: number) => sql.onDialectOrElse({ pg: () => `$${n}`, orElse: () => "?" })
      const cols = [
        "id",
        "kind",
        "job_id",
        "job_name",
        "lease_name",
        "attempt",
        "claim_token",
        "host",
        "pid",
        "lease_owner",
        "lease_expires_at",
        "clock_ms",
        "start_ms",
        "end_ms",
        "outcome",
        "lease_lost",
        "detail"
      ]
      const insertSql = `INSERT INTO ${table} (${cols.join(", ")}) VALUES (${cols.map((_, i) => ph(i + 1)).join(", ")})`
      const existsSql = `SELECT id FROM ${table} WHERE id = ${ph(1)}`
      const finishSql = `UPDATE ${table} SET end_ms = ${ph(1)}, outcome = ${ph(2)}, detail = ${ph(3)} WHERE id = ${
        ph(4)
      }`
      // An insert whose reply was lost (the server restarted) may have landed: look before retrying.
      const insertOnce = (row: HistoryRow) =>
        Effect.catchAll(
          sql.unsafe(insertSql, [
            row.id,
            row.kind,
            row.jobId,
            row.jobName,
            row.leaseName,
            row.attempt,
            row.claimToken,
            row.host,
            row.pid,
            row.leaseOwner,
            row.leaseExpiresAt,
            row.clockMs,
            row.startMs,
            row.endMs,
            row.outcome,
            row.leaseLost === null ? null : row.leaseLost ? 1 : 0,
            row.detail
          ]),
          (e) =>
            Effect.flatMap(
              sql.unsafe(existsSql, [row.id]),
              (found) => (found.length > 0 ? Effect.succeed([]) : Effect.fail(e))
            )
        )
      const bounded = <A, E>(what: string, effect: Effect.Effect<A, E>) =>
        retryFor(effect, 60_000, 200).pipe(
          Effect.asVoid,
          Effect.catchAll((e) => Effect.logError(`chaos history: ${what} failed for a minute; dropped`, e))
        )
      const fences = yield* Fences.make({ table: fencesTable(prefix) })
      const fencedSql = `UPDATE ${table} SET end_ms = ${ph(1)}, outcome = ${ph(2)}, detail = ${ph(3)}, fence = ${
        ph(4)
      }, fence_token = ${ph(5)}, fence_ms = ${ph(6)} WHERE id = ${ph(7)}`
      const plainFinish = (id: string, endMs: number, outcome: string, detail: string | null) =>
        bounded(`finish ${id}`, sql.unsafe(finishSql, [endMs, outcome, detail, id]))
      // Once through the guard; a refusal or any other failure is then recorded without it.
      const fencedFinish = (id: string, endMs: number, outcome: string, detail: string | null, fence: FenceOf) =>
        Effect.gen(function*() {
          const token = Number(fence.token)
          // Any end of the guard but success (a defect too) still records the run's end below: a
          // run whose end is missing reads as still running, an overlap with every later run.
          const guarded = yield* Effect.exit(fences.guard(
            fence,
            Effect.suspend(() => sql.unsafe(fencedSql, [endMs, outcome, detail, "applied", token, Date.now(), id]))
          ))
          if (Exit.isSuccess(guarded)) return
          const failure = Cause.failureOption(guarded.cause)
          const how = Option.isSome(failure) && failure.value._tag === "StaleTokenError" ? "refused" : "error"
          yield* bounded(
            `finish ${id}`,
            sql.unsafe(fencedSql, [endMs, outcome, detail, how, token, null, id])
          )
        })
      return History.of({
        write: (row) => bounded(`write ${row.kind} ${row.id}`, insertOnce(row)),
        finish: (id, endMs, outcome, detail, fence) =>
          fence === undefined
            ? plainFinish(id, endMs, outcome, detail)
            : fencedFinish(id, endMs, outcome, detail, fence)
      })
    })
  )

/** Payload of every chaos job. */
export const ChaosPayload = Schema.Struct({
  /** The enqueue sequence number within the run. */
  seq: Schema.Number,
  /** Concurrency key (keyed jobs only). */
  key: Schema.optional(Schema.String),
  /** How long perform works, wall-clock ms. */
  ms: Schema.Number,
  /** perform fails while its attempt ≤ this (0: never). */
  failUntil: Schema.Number,
  /** perform outlives its timeout while its attempt ≤ this (0: never). */
  overrunUntil: Schema.Number
})
/** A chaos job's payload. */
export type ChaosPayload = typeof ChaosPayload.Type

/** The failure a chaos job fails with on purpose. */
export class ChaosFailure extends Data.TaggedError("ChaosFailure")<{ readonly message: string }> {}

// Claim tokens of this process's runs by job id and attempt, so onResult (which sees the job and
// attempt, not the token) can name the run it reports on.
const tokens = new Map<string, string>()
const tokenKey = (jobId: string, attempt: number) => `${jobId}#${attempt}`

const outcomeOf = (exit: Exit.Exit<void, unknown>): { readonly outcome: string; readonly detail: string | null } => {
  if (Exit.isSuccess(exit)) return { outcome: "ok", detail: null }
  if (Cause.isInterruptedOnly(exit.cause)) return { outcome: "interrupted", detail: null }
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure) && failure.value instanceof Fenced) return { outcome: "fenced", detail: null }
  return { outcome: "error", detail: Cause.pretty(exit.cause).slice(0, 300) }
}

/** perform of every chaos job type: record the run, work (heartbeating when long), maybe fail. */
const perform = (p: ChaosPayload) =>
  Effect.gen(function*() {
    const ctx = yield* Job.JobContext
    const history = yield* History
    const startMs = Date.now()
    const clockMs = yield* Clock.currentTimeMillis
    const lease = Option.getOrNull(yield* ctx.lease)
    tokens.set(tokenKey(ctx.jobId, ctx.attempt), ctx.claimToken)
    yield* history.write({
      id: ctx.claimToken,
      kind: "run",
      jobId: ctx.jobId,
      jobName: ctx.name,
      leaseName: lease?.name ?? (p.key === undefined ? null : `key:${p.key}`),
      attempt: ctx.attempt,
      claimToken: ctx.claimToken,
      host: ctx.host,
      pid: process.pid,
      leaseOwner: lease?.owner ?? null,
      leaseExpiresAt: lease?.expiresAt ?? null,
      clockMs,
      startMs,
      endMs: null,
      outcome: null,
      leaseLost: null,
      detail: JSON.stringify({ seq: p.seq, ms: p.ms })
    })
    const work = Effect.gen(function*() {
      const overrun = ctx.attempt <= p.overrunUntil
      const total = overrun ? JOB_TIMEOUT_SECONDS * 1000 + 3000 : p.ms
      const beats = total > LONG_RUN_MS
      let done = 0
      while (done < total) {
        const step = beats ? Math.min(BEAT_MS, total - done) : total - done
        yield* Effect.sleep(step)
        done += step
        if (beats && done < total) {
          // Fenced: stop (the attempt was superseded). A database error: carry on, as an app would.
          yield* Effect.catchTag(
            Job.heartbeat,
            "SqlError",
            (e) => Effect.logWarning("heartbeat failed; carrying on", e)
          )
        }
      }
      if (ctx.attempt <= p.failUntil) {
        return yield* new ChaosFailure({ message: `planned failure of #${p.seq} on attempt ${ctx.attempt}` })
      }
    })
    yield* Effect.onExit(work, (exit) => {
      const { detail, outcome } = outcomeOf(exit)
      const fence = lease === null ? undefined : { resource: lease.name, token: lease.fencingToken }
      return history.finish(ctx.claimToken, Date.now(), outcome, detail, fence)
    })
  })

const common = {
  schema: ChaosPayload,
  maxRetries: MAX_RETRIES,
  timeout: `${JOB_TIMEOUT_SECONDS} seconds`,
  perform
} as const

/** A plain job: no lease. */
export const ChaosPlain = Job.define({ name: "ChaosPlain", ...common })

/** A job with a concurrency key from its payload: lease `key:<key>`. */
export const ChaosKeyed = Job.define({ name: "ChaosKeyed", ...common, concurrencyKeyFor: (p) => p.key })

/** A plain job that is not idempotent: reaped while running, it ends `interrupted`. */
export const ChaosOnce = Job.define({ name: "ChaosOnce", ...common, idempotent: false })

/** All chaos job types. */
export const chaosJobs = [ChaosPlain, ChaosKeyed, ChaosOnce] as const

/** The worker's onResult hook: one outcome row per attempt (deferrals included). */
export const recordOutcome = (host: string) => (result: Worker.ProcessResult): Effect.Effect<void, never, History> =>
  Effect.gen(function*() {
    if (!("job" in result)) return
    const history = yield* History
    const job = result.job
    const token = tokens.get(tokenKey(job.id, job.attempt)) ?? null
    if (token !== null && result._tag !== "Deferred") tokens.delete(tokenKey(job.id, job.attempt))
    const outcome = result._tag === "Failed" ? `Failed:${result.willRetry ? "retry" : "dead"}` : result._tag
    yield* history.write({
      id: randomUUID(),
      kind: "outcome",
      jobId: job.id,
      jobName: job.name,
      leaseName: result._tag === "Deferred" ? result.leaseName : null,
      attempt: job.attempt,
      claimToken: result._tag === "Deferred" ? null : token,
      host,
      pid: process.pid,
      leaseOwner: result._tag === "Deferred" ? result.holder : null,
      leaseExpiresAt: null,
      clockMs: null,
      startMs: null,
      endMs: Date.now(),
      outcome,
      leaseLost: "leaseLost" in result ? result.leaseLost : null,
      detail: result._tag === "Failed" ? result.error.slice(0, 300) : null
    })
  })
