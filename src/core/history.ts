/**
 * A job's attempt history (docs/behaviour.md §12): one record per attempt that ended (completed,
 * failed, dead, reaped, cancelled), the last `MAX_HISTORY` kept on the job row. The SQL stores append the
 * same record inside the statement that ends the attempt (src/adapters/*\/dialect.ts `history`);
 * the in-memory store appends it with `appendAttempt`.
 */

/**
 * How an attempt ended. `failed`: it failed and the job was retried (also when the reaper took
 * it back); `dead`: it failed with its retries used up; `interrupted`: reaped while running and
 * not retried (its type is not idempotent); `cancelled`: its job was cancelled while it was
 * processing (src/runtime/cancel.ts), recorded by the cancel itself.
 */
export type AttemptOutcome = "completed" | "failed" | "dead" | "interrupted" | "cancelled"

/** One attempt of a job, as its history keeps it. Times are epoch ms. */
export interface AttemptRecord {
  /** The attempt's number (the row's `attempts` while it ran; a retry of a dead job starts again at 1). */
  readonly attempt: number
  /** When the attempt was claimed. */
  readonly startedAt: number
  /**
   * When its outcome was written (for a reaped attempt: when the reaper found it; for a cancelled
   * one: when it was cancelled, though its perform may run on until its next heartbeat).
   */
  readonly endedAt: number
  readonly outcome: AttemptOutcome
  /** The error it ended with (as `last_error` holds it), or null. */
  readonly error: string | null
  /** The host that ran it. */
  readonly host: string | null
}

/** How many attempt records a job keeps: older ones are dropped as new ones are appended. */
export const MAX_HISTORY = 25

/** The record of the attempt a processing row holds, ending at `endedAt`. */
export const attemptRecord = (
  row: { readonly attempts: number; readonly updatedAt: number; readonly claimedBy: string | null },
  endedAt: number,
  outcome: AttemptOutcome,
  error: string | null
): AttemptRecord => ({ attempt: row.attempts, startedAt: row.updatedAt, endedAt, outcome, error, host: row.claimedBy })

/** `history` with `record` appended, keeping the last `MAX_HISTORY`. */
export const appendAttempt = (
  history: ReadonlyArray<AttemptRecord>,
  record: AttemptRecord
): ReadonlyArray<AttemptRecord> => [...history, record].slice(-MAX_HISTORY)

const OUTCOMES: ReadonlyArray<AttemptOutcome> = ["completed", "failed", "dead", "interrupted", "cancelled"]

/**
 * A stored history (JSON text, or the array a driver already parsed) as records. A missing
 * history (rows from before migration 7) is empty; entries that are not records are skipped.
 */
export const decodeHistory = (stored: unknown): ReadonlyArray<AttemptRecord> => {
  if (stored === null || stored === undefined) return []
  const value: unknown = typeof stored === "string" ? JSON.parse(stored) : stored
  if (!Array.isArray(value)) return []
  return value.flatMap((e: unknown): Array<AttemptRecord> => {
    if (e === null || typeof e !== "object") return []
    const r = e as Record<string, unknown>
    const outcome = r.outcome as AttemptOutcome
    if (!OUTCOMES.includes(outcome)) return []
    const num = (v: unknown) => Number(v)
    return [{
      attempt: num(r.attempt),
      startedAt: num(r.startedAt),
      endedAt: num(r.endedAt),
      outcome,
      error: r.error === null || r.error === undefined ? null : String(r.error),
      host: r.host === null || r.host === undefined ? null : String(r.host)
    }]
  })
}
