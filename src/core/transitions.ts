/**
 * The job state machine as pure transitions over rows (docs/behaviour.md §5–§7): what a claim,
 * an outcome, a deferral, a reap, a hand-off and a retry of a dead job do to a row, and when
 * each may apply. The in-memory store is a fold over these; the SQL stores write the same
 * changes in their statements, and the conformance suites hold them to it.
 */
import { appendAttempt, type AttemptOutcome, attemptRecord } from "./history.ts"
import type { ReapDecision } from "./jobs.ts"
import { giveBackAttempt, leaseWindowMs } from "./lease.ts"
import type {
  CancelFilter,
  ClaimInput,
  ClaimState,
  DeadJobFilter,
  FinishInput,
  JobRow,
  NewJob,
  Outcome,
  UniqueUntil
} from "./model.ts"

/** `last_error` of a row the reaper sent back to pending. */
export const REAPED_RETRY = "reaped: no sign of life within its grace (worker gone or stuck); retrying"
/** `last_error` of a row the reaper marked dead. */
export const REAPED_DEAD = "reaped: no sign of life within its grace (worker gone or stuck); retries used up"

/** A new row as enqueue writes it: pending, no attempts yet. */
export const newJobRow = (job: NewJob): JobRow => ({
  id: job.id,
  name: job.name,
  queue: job.queue,
  payload: job.payload,
  priority: job.priority,
  status: "pending",
  attempts: 0,
  maxRetries: job.maxRetries,
  claimTimeout: job.claimTimeout,
  claimToken: null,
  claimedBy: null,
  uniqueKey: job.uniqueKey,
  uniqueUntil: job.uniqueUntil ?? "purged",
  leaseName: null,
  heartbeatAt: null,
  graceMs: leaseWindowMs(job.claimTimeout),
  staleAt: null,
  lastError: null,
  runAt: job.runAt,
  completedAt: null,
  failedAt: null,
  createdAt: job.now,
  updatedAt: job.now,
  history: [],
  traceContext: job.traceContext ?? null,
  claimLease: job.claimLease ?? null
})

/**
 * Whether the job holding a unique key has let it go: its key was taken only until it finished
 * (`uniqueUntil: "finished"`), and it has (completed, dead, or any other status but pending and
 * processing). A new enqueue with the key then frees it (`applyFreeKey`) and inserts. Keys are
 * freed when next wanted, not when the job ends, so no path that ends a job has to know of them.
 */
export const keyFreed = (holder: { readonly status: string; readonly uniqueUntil: UniqueUntil }): boolean =>
  holder.uniqueUntil === "finished" && holder.status !== "pending" && holder.status !== "processing"

/** A finished job's row once its key is freed: its key is its own id, as if enqueued without one. */
export const applyFreeKey = (row: JobRow): JobRow => ({ ...row, uniqueKey: row.id })

/** Whether `row` may be claimed at `now` by a worker of `queues` (all queues when undefined). */
export const isDue = (row: JobRow, now: number, queues: ReadonlyArray<string> | undefined): boolean =>
  row.status === "pending" && row.runAt <= now && (queues === undefined || queues.includes(row.queue))

/** Claim order: higher priority first, then the earliest run_at (then the oldest). */
export const claimOrder = (a: JobRow, b: JobRow): number =>
  b.priority - a.priority || a.runAt - b.runAt || a.createdAt - b.createdAt

/**
 * Whether a claim's `perKey` rule (ClaimInput) lets it take the row: it is of a key `only`
 * names if it names any, and of no key the worker skips, or better (by priority) than the skip
 * allows.
 */
export const keyNotSkipped = (row: Pick<JobRow, "claimLease" | "priority">, perKey: ClaimInput["perKey"]): boolean =>
  perKey === undefined ||
  (perKey.only === undefined || (row.claimLease !== null && perKey.only.includes(row.claimLease))) &&
    (row.claimLease === null ||
      !perKey.skip.some((s) => s.lease === row.claimLease && row.priority <= s.priority))

/**
 * The `perKey` rule's one row per key: of `rows` in claim order, the first of each `claimLease`
 * (rows without one are all kept).
 */
export const onePerKey = <R extends Pick<JobRow, "claimLease">>(rows: ReadonlyArray<R>): Array<R> => {
  const seen = new Set<string>()
  return rows.filter((r) => {
    if (r.claimLease === null) return true
    if (seen.has(r.claimLease)) return false
    seen.add(r.claimLease)
    return true
  })
}

/** What the hand-off order reads of a job. */
export type HandOffRank = Pick<JobRow, "priority" | "createdAt" | "id">

/**
 * Hand-off order among jobs waiting on one lease: higher priority first, then the oldest, then
 * the lowest id (one best waiter even among jobs enqueued together, which share a created_at).
 */
export const handOffOrder = (a: HandOffRank, b: HandOffRank): number =>
  b.priority - a.priority || a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** A worker's timeout cap applied to a row's: the smaller of the two (no cap: the row's). */
export const cappedTimeout = (rowTimeout: number | null, cap: number | undefined): number | null =>
  cap !== undefined && (rowTimeout === null || rowTimeout > cap) ? cap : rowTimeout

/**
 * A worker's timeout cap applied to a row's grace: the smaller of the row's and the cap's window,
 * as the claim lowers the row's timeout (so grace and timeout stay one window apart). A row
 * without a grace (enqueued before migration 2, or by an older version) keeps none: its
 * deadline is then worked out by `isStale` from its timeout. The SQL claim writes the same with
 * one comparison (src/adapters/sql/jobStatements.ts).
 */
export const cappedGraceMs = (rowGraceMs: number | null, cap: number | undefined): number | null => {
  if (cap === undefined || rowGraceMs === null) return rowGraceMs
  const capGrace = leaseWindowMs(cap)
  return rowGraceMs > capGrace ? capGrace : rowGraceMs
}

/** A claimed row as the claim leaves it: processing, one more attempt, our token and host. */
export const applyClaim = (row: JobRow, input: ClaimInput): JobRow => ({
  ...row,
  status: "processing",
  // Claimed, it waits on no lease: a hand-off after a later failure must not cut its backoff.
  leaseName: null,
  attempts: row.attempts + 1,
  claimToken: input.claimToken,
  claimedBy: input.host,
  heartbeatAt: null,
  updatedAt: input.now,
  claimTimeout: cappedTimeout(row.claimTimeout, input.timeoutCap),
  ...deadlineAtClaim(row.graceMs, input)
})

/** The grace and stale deadline a claim writes: now + the capped grace, or none without a grace. */
const deadlineAtClaim = (graceMs: number | null, input: ClaimInput) => {
  const grace = cappedGraceMs(graceMs, input.timeoutCap)
  return { graceMs: grace, staleAt: grace === null ? null : input.now + grace }
}

/** A heartbeat: the attempt was seen at `now`; its row is stale only after `staleAt`. */
export const applyHeartbeat = (row: JobRow, now: number, staleAt: number): JobRow => ({
  ...row,
  heartbeatAt: now,
  staleAt
})

/** Whether `row` is the running attempt that holds `token` (every attempt write is fenced on it). */
export const isOurs = (row: JobRow, token: string): boolean => row.status === "processing" && row.claimToken === token

/** How an outcome or a reap decision ends the attempt, in its history (src/core/history.ts). */
export const attemptOutcomeOf = (o: Outcome | ReapDecision): AttemptOutcome => {
  switch (o._tag) {
    case "Complete":
      return "completed"
    case "Retry":
      return "failed"
    case "Kill":
    case "Dead":
      return "dead"
    case "Interrupted":
      return "interrupted"
  }
}

/** The row's history with the attempt it holds ended at `now` (read before the change). */
const ended = (row: JobRow, now: number, o: Outcome | ReapDecision, error: string | null) =>
  appendAttempt(row.history, attemptRecord(row, now, attemptOutcomeOf(o), error))

/**
 * The error an outcome or a reap writes to `last_error` and to the attempt's history: the
 * reaper's own message for a reaped attempt.
 */
export const outcomeError = (o: Outcome | ReapDecision): string | null => {
  switch (o._tag) {
    case "Complete":
      return null
    case "Retry":
    case "Kill":
      return "error" in o ? o.error : REAPED_RETRY
    case "Dead":
      return REAPED_DEAD
    case "Interrupted":
      return o.message
  }
}

/** The row as an attempt's outcome leaves it. A retry clears the token; completion and death keep it. */
export const applyOutcome = (row: JobRow, outcome: Outcome, now: number): JobRow => {
  const done = { ...row, history: ended(row, now, outcome, outcomeError(outcome)) }
  switch (outcome._tag) {
    case "Complete":
      return { ...done, status: "completed", completedAt: now, updatedAt: now, staleAt: null }
    case "Retry":
      return {
        ...done,
        status: "pending",
        runAt: outcome.runAt,
        lastError: outcome.error,
        claimToken: null,
        updatedAt: now,
        staleAt: null
      }
    case "Kill":
      return { ...done, status: "failed", failedAt: now, lastError: outcome.error, updatedAt: now, staleAt: null }
  }
}

/**
 * Whether a busy lease may defer the attempt holding `token`: it must be ours and have an
 * attempt to give back (a row with none is refused, never clamped: it was not claimed by us).
 */
export const mayDefer = (row: JobRow, token: string): boolean => isOurs(row, token) && row.attempts > 0

/**
 * The row as a give-back leaves it: pending again, its attempt given back, no claim. A claimed
 * job the worker did not start after all (it stopped) is left so, due as before the claim.
 * Guarded by `mayDefer`.
 */
export const applyGiveBack = (row: JobRow, now: number): JobRow => ({
  ...row,
  status: "pending",
  attempts: giveBackAttempt(row.attempts),
  claimToken: null,
  updatedAt: now,
  staleAt: null
})

/** The row as a deferral leaves it: given back, pending at `runAt`, waiting on the lease. */
export const applyDefer = (row: JobRow, now: number, runAt: number, leaseName: string): JobRow => ({
  ...applyGiveBack(row, now),
  runAt,
  leaseName
})

/** The row as a reap leaves it (the reaper decided with `reapDecision` in ./jobs.ts). */
export const applyReap = (row: JobRow, decision: ReapDecision, now: number): JobRow => {
  const done = { ...row, history: ended(row, now, decision, outcomeError(decision)) }
  switch (decision._tag) {
    case "Retry":
      return {
        ...done,
        status: "pending",
        runAt: decision.runAt,
        claimToken: null,
        lastError: REAPED_RETRY,
        updatedAt: now,
        staleAt: null
      }
    case "Dead":
      return {
        ...done,
        status: "failed",
        failedAt: now,
        claimToken: null,
        lastError: REAPED_DEAD,
        updatedAt: now,
        staleAt: null
      }
    case "Interrupted":
      return {
        ...done,
        status: "interrupted",
        failedAt: now,
        claimToken: null,
        lastError: decision.message,
        updatedAt: now,
        staleAt: null
      }
  }
}

/**
 * Whether a finish that releases its lease hands off to the lease's next waiter: unless it says
 * not to (`handOff` false: an attempt of its worker takes the lease next); and always when it
 * was to pass the lease on only while nobody waits (`transferTo.unlessWaiting`) and could not.
 */
export const finishHandsOff = (input: Pick<FinishInput, "handOff" | "transferTo">): boolean =>
  input.handOff !== false || input.transferTo?.unlessWaiting === true

/**
 * Whether `row` waits on `leaseName` for a hand-off. The attempt that releases the lease is
 * never its own waiter (`exceptId`): a retry written with the release keeps its backoff.
 */
export const isWaiting = (row: JobRow, leaseName: string, exceptId?: string): boolean =>
  row.leaseName === leaseName && row.status === "pending" && row.id !== exceptId

/**
 * A hand-off makes the chosen waiter due now, in its place in the queue: never later than it
 * already was, nor than when it was enqueued. Claims take the oldest run_at first, so a waiter
 * made due at `now` would wait behind every job of its key enqueued before then, and the next
 * hand-offs would wake it again (it is still the best waiter) rather than a waiter asleep behind
 * it (on a hot key, the hand-offs that go through the database would keep waking the same job).
 */
export const applyHandOff = (row: JobRow, now: number): JobRow => ({
  ...row,
  runAt: Math.min(row.runAt, now, row.createdAt)
})

/** Whether a job may be retried by hand: only a dead or interrupted one. */
export const isRetryable = (row: JobRow): boolean => row.status === "failed" || row.status === "interrupted"

/** A dead, interrupted or cancelled job put back: pending, due now, with fresh attempts. */
export const applyRetryDead = (row: JobRow, now: number): JobRow => ({
  ...row,
  status: "pending",
  attempts: 0,
  runAt: now,
  claimToken: null,
  failedAt: null,
  updatedAt: now
})

/**
 * Whether `row` is dead (or cancelled) in one of the filter's statuses and matches the rest of
 * `filter` (a retry or discard by filter takes it).
 */
export const matchesDead = (row: JobRow, filter: DeadJobFilter): boolean =>
  (row.status === "failed" || row.status === "interrupted" || row.status === "cancelled") &&
  filter.statuses.includes(row.status) &&
  row.failedAt !== null && row.failedAt <= filter.diedBefore &&
  (filter.ids === undefined || filter.ids.includes(row.id)) &&
  (filter.name === undefined || row.name === filter.name) &&
  (filter.queue === undefined || row.queue === filter.queue)

/** Dead jobs in the order a retry or discard by filter takes them: longest dead first. */
export const deadOrder = (a: JobRow, b: JobRow): number =>
  (a.failedAt ?? 0) - (b.failedAt ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** Whether `row` shows `outcome` written by the attempt holding `token` (after a reply was lost). */
export const showsOutcome = (row: JobRow, token: string, outcome: Outcome): boolean => {
  switch (outcome._tag) {
    case "Complete":
      return row.status === "completed" && row.claimToken === token
    case "Kill":
      return row.status === "failed" && row.claimToken === token && row.lastError === outcome.error
    case "Retry":
      // The token is cleared by a retry; the error and run_at it wrote identify it well enough.
      return row.status === "pending" && row.claimToken === null && row.lastError === outcome.error &&
        row.runAt === outcome.runAt
  }
}

/** Whether a cancel with `filter` applies to `row`: unfinished, and matching every given field. */
export const matchesCancel = (row: JobRow, filter: CancelFilter): boolean =>
  (row.status === "pending" || row.status === "processing") &&
  (filter.id === undefined || row.id === filter.id) &&
  (filter.status === undefined || row.status === filter.status) &&
  (filter.queue === undefined || row.queue === filter.queue) &&
  (filter.name === undefined || row.name === filter.name)

/**
 * The row as a cancel leaves it: cancelled (final), ended at `now` (`failed_at`, which purge
 * reads); a processing row's attempt is recorded in its history as `cancelled`. The claim token stays, so a running attempt can tell its own cancellation from a
 * fence; its lease stays with it until the attempt ends (at its next heartbeat at the latest).
 */
export const applyCancel = (row: JobRow, now: number): JobRow => ({
  ...row,
  history: row.status === "processing"
    ? appendAttempt(row.history, attemptRecord(row, now, "cancelled", null))
    : row.history,
  status: "cancelled",
  failedAt: now,
  updatedAt: now,
  staleAt: null
})

/** Where the claim `token` on a job stands, given its row now (undefined: gone). */
export const claimStateOf = (row: Pick<JobRow, "status" | "claimToken"> | undefined, token: string): ClaimState =>
  row?.claimToken !== token ? "lost" : row.status === "processing" ? "ours" : row.status === "cancelled"
    ? "cancelled" :
    "lost"
