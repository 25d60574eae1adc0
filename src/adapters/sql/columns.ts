/**
 * The jobs and hosts tables' column lists and a new job's row, shared by every dialect's
 * statements (the dialect folders, ./jobStatements.ts, ./JobInsights.ts).
 */
import { leaseWindowMs } from "../../core/lease.ts"
import type { NewJob } from "../../core/model.ts"
import type { JobSqlContext } from "./dialect.ts"
import { RawSql, type Statement } from "./statement.ts"

/** The columns of a job row, in table order. */
export const JOB_COLUMNS = new RawSql(
  "id, name, queue, payload, priority, status, attempts, max_retries, claim_timeout, claim_token, claimed_by, " +
    "unique_key, unique_until_finished, lease_name, heartbeat_at, grace_ms, stale_at, last_error, run_at, completed_at, failed_at, created_at, updated_at, history, trace_context, claim_lease"
)

/**
 * The hosts table's columns, named: a worker reads its own row before a claim (its drain state),
 * and a select list with a `*` is never a prepared statement on PostgreSQL
 * (src/adapters/postgres/preparing.ts), so it was parsed and planned on every read.
 */
export const HOST_COLUMNS = new RawSql(
  "host, last_seen_at, started_at, running, max_concurrent, draining, drain_expires_at, code_version"
)

/**
 * A new job's row, column by column: pending, no attempts, the lease window of its timeout
 * (src/core/lease.ts), created now. `trace_context` and `claim_lease` are null without a tracer
 * installed at enqueue, or a lease its type takes.
 */
export const newJobRecord = (j: NewJob) => ({
  id: j.id,
  name: j.name,
  queue: j.queue,
  payload: j.payload,
  priority: j.priority,
  status: "pending",
  attempts: 0,
  max_retries: j.maxRetries,
  claim_timeout: j.claimTimeout,
  grace_ms: leaseWindowMs(j.claimTimeout),
  unique_key: j.uniqueKey,
  unique_until_finished: j.uniqueUntil === "finished" ? 1 : 0,
  run_at: j.runAt,
  created_at: j.now,
  updated_at: j.now,
  trace_context: j.traceContext ?? null,
  claim_lease: j.claimLease ?? null
})

// The columns every new row is written with, in `newJobRecord`'s order; `trace_context` and
// `claim_lease` follow.
const NEW_ROW_BASE_COLUMNS =
  "id, name, queue, payload, priority, status, attempts, max_retries, claim_timeout, grace_ms, unique_key, unique_until_finished, run_at, created_at, updated_at"

/** The columns of `newJobRecord`, in its order. */
export const NEW_JOB_COLUMNS = new RawSql(`${NEW_ROW_BASE_COLUMNS}, trace_context, claim_lease`)

/**
 * The column list and VALUES of new job rows (`newJobRecord`), for a dialect's INSERT to wrap.
 * One row or many.
 */
export const newJobRows = (_c: JobSqlContext, jobs: ReadonlyArray<NewJob>): Statement => {
  // One flat fragment, not a statement per row: a chunk of 1,000 rows is rendered once per
  // statement it is nested in, never row by row. `trace_context` and `claim_lease` are written
  // only by a batch that has one: without, the rows carry no extra value.
  const traced = jobs.some((j) => j.traceContext !== undefined)
  const leased = jobs.some((j) => j.claimLease !== undefined)
  const columns = `(${NEW_ROW_BASE_COLUMNS}` + (traced ? ", trace_context" : "") + (leased ? ", claim_lease" : "") + ")"
  const glue = [...ROW_GLUE, ...(traced ? [", "] : []), ...(leased ? [", "] : [])]
  const strings: Array<string> = []
  const values: Array<unknown> = []
  jobs.forEach((j, i) => {
    const r = newJobRecord(j)
    strings.push(i === 0 ? columns + " VALUES (" : "), (", ...glue)
    values.push(
      r.id,
      r.name,
      r.queue,
      r.payload,
      r.priority,
      r.max_retries,
      r.claim_timeout,
      r.grace_ms,
      r.unique_key,
      r.unique_until_finished,
      r.run_at,
      r.created_at,
      r.updated_at
    )
    if (traced) values.push(r.trace_context)
    if (leased) values.push(r.claim_lease)
  })
  strings.push(")")
  return { sql: "", params: [], fragment: { strings, values } }
}

// The text between a row's 13 values: status 'pending' and attempts 0 are written as literals.
const ROW_GLUE = [", ", ", ", ", ", ", ", ", 'pending', 0, ", ", ", ", ", ", ", ", ", ", ", ", ", ", "]
