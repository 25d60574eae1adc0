/**
 * The job rules, as pure functions over plain data (docs/behaviour.md §4–§7, §9): backoff, what a
 * failure or a reap does to a row, staleness, and the tallies that processQueue and tick
 * report. No I/O: stores and the worker call these and write what they decide.
 */
import { MAX_INT32 } from "./input.ts"
import { leaseWindowMs } from "./lease.ts"

/**
 * Job statuses. `failed` is dead (retries used up); `interrupted` is reaped and not idempotent;
 * `cancelled` was cancelled before it finished (src/runtime/cancel.ts). The last four are final.
 */
export type JobStatus = "pending" | "processing" | "completed" | "failed" | "interrupted" | "cancelled"

/** All statuses, in lifecycle order. */
export const JOB_STATUSES: ReadonlyArray<JobStatus> = [
  "pending",
  "processing",
  "completed",
  "failed",
  "interrupted",
  "cancelled"
]

/** The statuses a job can be cancelled in: it has not finished. */
export const CANCELLABLE_STATUSES = ["pending", "processing"] as const

/** Longest unique key a job row holds. */
export const MAX_UNIQUE_KEY_LENGTH = 255
/** Longest job name and queue name a job row holds. */
export const MAX_NAME_LENGTH = 255
/**
 * Longest timeout a job may have, in seconds (11.5 days): its reaper grace in ms, 2 × timeout
 * × 1000, then fits the 32-bit integer arithmetic of every database.
 */
export const MAX_TIMEOUT_SECONDS = 1_000_000
/**
 * Longest backoff delay a job type may declare, in seconds (about 68 years), so that
 * now + delay stays an exact epoch-ms integer.
 */
export const MAX_BACKOFF_SECONDS = MAX_INT32
/**
 * Most attempts one long-running worker runs at once (its `concurrency`). Each is a fiber that
 * polls the database; more than this in one process would only queue on the connection pool.
 */
export const MAX_CONCURRENCY = 1_000
/** `last_error` is cut to this many characters. */
export const MAX_ERROR_LENGTH = 1000

/** How retries are spaced. */
export interface BackoffOptions {
  readonly kind: "exponential" | "linear"
  /** Base delay in seconds (default 2). */
  readonly baseSeconds: number
  /** Longest delay in seconds (default 3600). */
  readonly maxSeconds: number
}

/** The default backoff: exponential, base 2 s, at most an hour (4 s, 8 s, 16 s …). */
export const DEFAULT_BACKOFF: BackoffOptions = { kind: "exponential", baseSeconds: 2, maxSeconds: 3600 }

/**
 * Seconds to wait before the next run after the `attempts`-th run failed:
 * exponential → min(base × 2^attempts, max); linear → min(base × attempts, max).
 */
export const backoffSeconds = (backoff: BackoffOptions, attempts: number): number => {
  const n = Math.max(1, attempts)
  const raw = backoff.kind === "linear" ? backoff.baseSeconds * n : backoff.baseSeconds * 2 ** Math.min(n, 60)
  return Math.min(backoff.maxSeconds, raw)
}

/** What a failed attempt does to its row. */
export type FailureDecision =
  | { readonly _tag: "Retry"; readonly runAt: number }
  | { readonly _tag: "Dead" }

/**
 * After a failed run: retry (pending, run_at = now + backoff) while attempts ≤ max_retries,
 * otherwise dead. So a job runs at most max_retries + 1 times. The backoff is rounded to whole
 * milliseconds (at least 1), since run_at is a BIGINT: a fractional base such as 0.0004 s must
 * not produce a fractional run_at that a database refuses.
 */
export const decideFailure = (
  row: { readonly attempts: number; readonly maxRetries: number },
  backoff: BackoffOptions,
  now: number
): FailureDecision =>
  row.attempts <= row.maxRetries
    ? { _tag: "Retry", runAt: now + Math.max(1, Math.round(backoffSeconds(backoff, row.attempts) * 1000)) }
    : { _tag: "Dead" }

/**
 * Whether a processing row is stale at `now`: strictly past the deadline its claim or last
 * heartbeat wrote (src/core/transitions.ts `applyClaim`, `applyHeartbeat`). A row with no
 * deadline (no grace was known at its claim: enqueued or claimed by a version before migration
 * 2) is stale once its last sign of life is a lease window of its timeout old.
 */
export const isStale = (
  row: {
    readonly status: JobStatus
    readonly staleAt: number | null
    readonly heartbeatAt: number | null
    readonly updatedAt: number
    readonly claimTimeout: number | null
  },
  now: number
): boolean =>
  row.status === "processing" &&
  (row.staleAt !== null
    ? row.staleAt < now
    : (row.heartbeatAt ?? row.updatedAt) + leaseWindowMs(row.claimTimeout) < now)

/** What the reaper does to a stale row. */
export type ReapDecision =
  | FailureDecision
  | { readonly _tag: "Interrupted"; readonly message: string }

/**
 * A stale row of an idempotent type follows the retry rules; of a non-idempotent type it is
 * marked interrupted (final), because running it again could repeat its effects.
 */
export const decideReap = (
  row: { readonly attempts: number; readonly maxRetries: number; readonly name: string },
  type: { readonly idempotent: boolean; readonly backoff: BackoffOptions },
  now: number
): ReapDecision =>
  type.idempotent
    ? decideFailure(row, type.backoff, now)
    : {
      _tag: "Interrupted",
      message: `reaped while running (no heartbeat within its grace); not retried because ${row.name} is not idempotent`
    }

/** Cuts an error message to what `last_error` holds. */
export const cutError = (message: string): string =>
  message.length <= MAX_ERROR_LENGTH ? message : message.slice(0, MAX_ERROR_LENGTH - 1) + "…"

/** What processQueue returns (docs/behaviour.md §9). A deferral counts as skipped, never as failed. */
export interface QueueTally {
  readonly processed: number
  readonly failed: number
  readonly skipped: number
  readonly fenced: number
  /** Attempts that ended because their job was cancelled (nothing more recorded). */
  readonly cancelled: number
  readonly leasesLost: number
  /** The messages of the last `MAX_TALLY_ERRORS` failures, oldest first (a long-running worker's tally must not grow). */
  readonly errors: ReadonlyArray<string>
}

/** How many failure messages a tally keeps. */
export const MAX_TALLY_ERRORS = 100

/** `errors` with `message` added, keeping the last `MAX_TALLY_ERRORS`. */
export const withError = (errors: ReadonlyArray<string>, message: string): ReadonlyArray<string> =>
  errors.length < MAX_TALLY_ERRORS
    ? [...errors, message]
    : [...errors.slice(errors.length - MAX_TALLY_ERRORS + 1), message]

/** An empty tally. */
export const emptyTally: QueueTally = {
  processed: 0,
  failed: 0,
  skipped: 0,
  fenced: 0,
  cancelled: 0,
  leasesLost: 0,
  errors: []
}

/** Whether an attempt outcome counts toward processQueue's `limit` (deferrals do not). */
export const countsTowardLimit = (tag: string): boolean =>
  tag === "Completed" || tag === "Failed" || tag === "Fenced" || tag === "Cancelled"
