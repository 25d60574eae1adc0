/**
 * The chaos job types and the history they write.
 *
 * Every perform records a *run* row in the run's history table (same database, its own table
 * `<prefix>chaos_history`): job id, attempt, claim token, the lease it holds (name, owner, expiry
 * as `JobContext.lease` reports it), the worker's Clock reading, and wall-clock start and end.
 * The worker's `onResult` hook adds an *outcome* row per attempt (Completed / Failed / Fenced /
 * Deferred, with `leaseLost`). A run of a type with flow limits (`ChaosLimited`, `ChaosRated`) also
 * records its concurrency key and the cap and rate slots its attempt holds, read from the lease
 * table as perform starts. The checkers (check.ts, limits.ts) read both. Wall-clock times come from
 * `Date.now()`, not the Clock: they are the ground truth, the same for every process on this
 * machine whatever a worker's Clock says.
 */
import { SqlClient } from "@effect/sql"
import { Cause, Clock, Context, Data, Duration, Effect, Exit, Layer, Option, Schema } from "effect"
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
  fence_ms BIGINT NULL,
  conc_key VARCHAR(100) NULL,
  key_token BIGINT NULL,
  cap_slot VARCHAR(100) NULL,
  cap_token BIGINT NULL,
  rate_slot VARCHAR(100) NULL,
  rate_token BIGINT NULL,
  rate_acquired_at BIGINT NULL,
  rate_expires_at BIGINT NULL,
  slots_read INT NULL
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
  /** A limited type's run (see `SlotsHeld`): its concurrency key, or null for a type without one. */
  readonly concKey?: string | null
  /** The fencing token of the key's lease slot it holds (`JobContext.lease`). */
  readonly keyToken?: bigint | null
  readonly capSlot?: string | null
  readonly capToken?: bigint | null
  readonly rateSlot?: string | null
  readonly rateToken?: bigint | null
  /** The rate slot's take and expiry as the lease table holds them, in the taker's Clock ms. */
  readonly rateAcquiredAt?: number | null
  readonly rateExpiresAt?: number | null
  /** Whether the slots were read (false: the lookup failed, so no slot says nothing). */
  readonly slotsRead?: boolean | null
}

/**
 * The cap and rate slots an attempt holds as its perform starts, read from the lease table (the
 * cap slot is owned by the claim token, the rate slot by `rate:<claim token>`): perform's context
 * shows only the key's lease, and an overshoot must be traceable to the slots behind it.
 */
export interface SlotsHeld {
  readonly capSlot: string | null
  readonly capToken: bigint | null
  readonly rateSlot: string | null
  readonly rateToken: bigint | null
  readonly rateAcquiredAt: number | null
  readonly rateExpiresAt: number | null
  readonly slotsRead: boolean
}

const noSlots: SlotsHeld = {
  capSlot: null,
  capToken: null,
  rateSlot: null,
  rateToken: null,
  rateAcquiredAt: null,
  rateExpiresAt: null,
  slotsRead: false
}

/** A guarded end of a run: the lease it held and its fencing token. */
export interface FenceOf {
  readonly resource: string
  readonly token: bigint
}

/** Writes history rows; each write is retried for up to a minute (it must outlive a server restart). */
export interface HistoryApi {
  readonly write: (row: HistoryRow) => Effect.Effect<void>
  /** The slots an attempt holds now; empty where the read fails (a run never waits on it long). */
  readonly slotsOf: (claimToken: string) => Effect.Effect<SlotsHeld>
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
const big = (v: unknown): bigint | null => (v === null || v === undefined ? null : BigInt(String(v)))

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
  fenceToken: big(r.fence_token),
  fenceMs: num(r.fence_ms),
  concKey: str(r.conc_key),
  keyToken: big(r.key_token),
  capSlot: str(r.cap_slot),
  capToken: big(r.cap_token),
  rateSlot: str(r.rate_slot),
  rateToken: big(r.rate_token),
  rateAcquiredAt: num(r.rate_acquired_at),
  rateExpiresAt: num(r.rate_expires_at),
  slotsRead: r.slots_read === null || r.slots_read === undefined ? null : Number(r.slots_read) !== 0
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
        "detail",
        "conc_key",
        "key_token",
        "cap_slot",
        "cap_token",
        "rate_slot",
        "rate_token",
        "rate_acquired_at",
        "rate_expires_at",
        "slots_read"
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
            row.detail,
            row.concKey ?? null,
            row.keyToken === null || row.keyToken === undefined ? null : Number(row.keyToken),
            row.capSlot ?? null,
            row.capToken === null || row.capToken === undefined ? null : Number(row.capToken),
            row.rateSlot ?? null,
            row.rateToken === null || row.rateToken === undefined ? null : Number(row.rateToken),
            row.rateAcquiredAt ?? null,
            row.rateExpiresAt ?? null,
            row.slotsRead === null || row.slotsRead === undefined ? null : row.slotsRead ? 1 : 0
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
      // leasehold's lease table of this prefix and its token counters (src/core/tables.ts).
      const locks = quoteIdent(sql, `${prefix}job_locks`)
      const lockTokens = quoteIdent(sql, `${prefix}job_locks_tokens`)
      const slotsSql = `SELECT l.lockname, l.lockowner, l.acquiredat, l.expiresat, k.token FROM ${locks} l ` +
        `LEFT JOIN ${lockTokens} k ON k.lockname = l.lockname WHERE l.lockowner IN (${ph(1)}, ${ph(2)})`
      const slotsOf = (claimToken: string): Effect.Effect<SlotsHeld> =>
        sql.unsafe<Record<string, unknown>>(slotsSql, [claimToken, `rate:${claimToken}`]).pipe(
          Effect.map((rows) => {
            const out: { -readonly [K in keyof SlotsHeld]: SlotsHeld[K] } = { ...noSlots, slotsRead: true }
            for (const r of rows) {
              const name = String(r.lockname)
              if (String(r.lockowner) === `rate:${claimToken}`) {
                out.rateSlot = name
                out.rateToken = big(r.token)
                out.rateAcquiredAt = num(r.acquiredat)
                out.rateExpiresAt = num(r.expiresat)
              } else if (name.startsWith("cap:")) {
                out.capSlot = name
                out.capToken = big(r.token)
              }
            }
            return out as SlotsHeld
          }),
          Effect.timeout("3 seconds"),
          Effect.orElseSucceed(() => noSlots)
        )
      return History.of({
        slotsOf,
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
    // Read after the start is taken: the lookup's round trip must not move the recorded start.
    const limited = LIMITED_TYPES.has(ctx.name)
    const slots = limited ? yield* history.slotsOf(ctx.claimToken) : noSlots
    yield* history.write({
      ...(limited
        ? { ...slots, concKey: p.key ?? null, keyToken: lease?.fencingToken ?? null }
        : {}),
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

/**
 * The flow limits under test, for a chaos clock running `speed`× (clock.ts). A rate limit's period
 * is Clock time, which the warp shortens: it is set to `RATE_PERIOD_WALL_MS` of wall time, so
 * that the workload below can reach it, and so that at the default speed it is longer than the
 * skewed worker's offset (8 s of Clock time against a period of 12 s), where the checker's rule
 * for the skewed worker's starts is exact (limits.ts).
 */
export interface LimitsSpec {
  /** The rate limits' period, in Clock ms. */
  readonly periodMs: number
  /**
   * Keyed over `keys` keys: at most `keyLimit` per key and `typeCap` in all at once, `rate`
   * starts per period per key.
   */
  readonly limited: {
    readonly name: "ChaosLimited"
    readonly keys: number
    readonly keyLimit: number
    readonly typeCap: number
    readonly rate: number
  }
  /** No key: `rate` starts per period for the whole type. */
  readonly rated: { readonly name: "ChaosRated"; readonly rate: number }
}

/** The rate limits' period in wall-clock ms, whatever the clock's speed. */
export const RATE_PERIOD_WALL_MS = 2000

/** The limits of a run whose clock runs `speed`× (see `LimitsSpec`). */
export const limitsSpec = (speed: number): LimitsSpec => ({
  periodMs: Math.round(RATE_PERIOD_WALL_MS * speed),
  limited: { name: "ChaosLimited", keys: 5, keyLimit: 2, typeCap: 4, rate: 5 },
  rated: { name: "ChaosRated", rate: 3 }
})

const LIMITED_TYPES: ReadonlySet<string> = new Set(["ChaosLimited", "ChaosRated"])

/**
 * The limited job types of a run whose clock runs `speed`×: a keyed one with all three limits, an
 * unkeyed rated one.
 */
export const limitedJobs = (speed: number) => {
  const spec = limitsSpec(speed)
  const period = Duration.millis(spec.periodMs)
  return {
    ChaosLimited: Job.define({
      name: spec.limited.name,
      ...common,
      concurrencyKeyFor: (p) => p.key,
      concurrencyLimit: spec.limited.keyLimit,
      typeConcurrencyLimit: spec.limited.typeCap,
      rateLimit: { limit: spec.limited.rate, period }
    }),
    ChaosRated: Job.define({ name: spec.rated.name, ...common, rateLimit: { limit: spec.rated.rate, period } })
  } as const
}

/** All chaos job types of a run whose clock runs `speed`×. */
export const chaosJobsFor = (speed: number) => {
  const { ChaosLimited, ChaosRated } = limitedJobs(speed)
  return [ChaosPlain, ChaosKeyed, ChaosOnce, ChaosLimited, ChaosRated] as const
}

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
