/**
 * The domain's data (docs/behaviour.md §1): job and host rows, what enqueue, claim and the end
 * of an attempt carry. Plain data, shared by the ports, every store and the runtime.
 */
import type { AttemptRecord } from "./history.ts"
import type { JobStatus } from "./jobs.ts"

/** One row of the jobs table. Times are epoch ms. */
export interface JobRow {
  readonly id: string
  readonly name: string
  readonly queue: string
  /** The payload as the job type's Schema encoded it, in JSON. */
  readonly payload: string
  readonly priority: number
  readonly status: JobStatus
  readonly attempts: number
  readonly maxRetries: number
  /** Seconds; the smaller of the job type's timeout and the claiming worker's cap. */
  readonly claimTimeout: number | null
  readonly claimToken: string | null
  readonly claimedBy: string | null
  readonly uniqueKey: string
  /** How long `uniqueKey` stays taken (migration 6; rows written before it: "purged"). */
  readonly uniqueUntil: UniqueUntil
  /** The lease a deferred job waits for, so a release can hand off to it. */
  readonly leaseName: string | null
  readonly heartbeatAt: number | null
  /**
   * The lease window in ms of the job's own timeout, written at enqueue (null on rows enqueued
   * before migration 2 that had no timeout); a claim caps it by the worker's cap.
   */
  readonly graceMs: number | null
  /**
   * Epoch ms after which a processing row with no further sign of life is stale: set by the
   * claim (claim time + capped grace) and moved by each heartbeat. SQL only compares it.
   */
  readonly staleAt: number | null
  readonly lastError: string | null
  readonly runAt: number
  readonly completedAt: number | null
  readonly failedAt: number | null
  readonly createdAt: number
  readonly updatedAt: number
  /** Its last attempts, oldest first (at most `MAX_HISTORY`; src/core/history.ts). */
  readonly history: ReadonlyArray<AttemptRecord>
  /**
   * The W3C traceparent of the span that enqueued it (migration 9; src/core/traceContext.ts), or
   * null: enqueued with no tracer installed, or before migration 9.
   */
  readonly traceContext: string | null
  /**
   * The lease its attempts take (slot 0 of its key), written at enqueue (migration 11) so a
   * claim can take it in the claim's own statement; null: the job takes none, or was enqueued
   * before migration 11 (its attempt then takes its lease itself).
   */
  readonly claimLease: string | null
  /**
   * Set only on a row just claimed by a claim that also took `claimLease` for this attempt
   * (PostgreSQL), owned by its claim token: the attempt holds it from the start.
   */
  readonly leaseTaken?: LeaseTaken | undefined
}

/** A lease a claim took for the attempt it claimed (`JobRow.leaseTaken`). */
export interface LeaseTaken {
  readonly name: string
  /** Epoch ms: the claim's stale deadline (src/core/lease.ts `leaseExpiresAt`). */
  readonly expiresAt: number
  /** The acquisition's fencing token (docs/behaviour.md §2). */
  readonly fencingToken: bigint
}

/**
 * How long a job's unique key stays taken: until its row is purged (the default), or only until
 * the job is finished (any status but pending and processing), after which a new enqueue with
 * the key takes it (src/core/transitions.ts `keyFreed`).
 */
export type UniqueUntil = "purged" | "finished"

/** Every unique-key scope, the default first. */
export const UNIQUE_UNTIL: ReadonlyArray<UniqueUntil> = ["purged", "finished"]

/** A job row to insert. `uniqueKey` is the job's own id when the caller gave none. */
export interface NewJob {
  readonly id: string
  readonly name: string
  readonly queue: string
  readonly payload: string
  readonly priority: number
  readonly maxRetries: number
  readonly claimTimeout: number
  readonly uniqueKey: string
  /** Default "purged". */
  readonly uniqueUntil?: UniqueUntil | undefined
  readonly runAt: number
  readonly now: number
  /** The enqueuing span's traceparent (src/core/traceContext.ts); none without a tracer. */
  readonly traceContext?: string | undefined
  /** The lease its attempts take (src/core/lease.ts `leaseNameFor`); none for a job without one. */
  readonly claimLease?: string | undefined
}

/** What a claim asks for. */
export interface ClaimInput {
  /** Claim only from these queues; all queues when undefined. */
  readonly queues: ReadonlyArray<string> | undefined
  readonly host: string
  readonly now: number
  /** The fresh claim token this attempt will carry. */
  readonly claimToken: string
  /** The worker's timeout cap in seconds: the claim stores min(row's timeout, cap). */
  readonly timeoutCap: number | undefined
  /** With a cap > 0, a host whose processing rows reach it claims nothing. */
  readonly hostCap: number | undefined
  /**
   * A long-running worker's claim (src/runtime/worker/keyClaims.ts): at most one row per
   * `claim_lease` in one claim, and no row of a `skip` entry's lease with a priority at most its
   * `priority` (keys whose every slot this worker's jobs hold, with one more waiting: another
   * would only be deferred, unless it is better than the one waiting). With `only`, rows of those
   * `claim_lease`s alone (the next jobs of keys that have room again). Undefined: no such rule.
   */
  readonly perKey?: {
    readonly skip: ReadonlyArray<{ readonly lease: string; readonly priority: number }>
    readonly only?: ReadonlyArray<string> | undefined
  } | undefined
}

/** The outcome of a claim. */
export type ClaimResult =
  | { readonly _tag: "Claimed"; readonly job: JobRow }
  | { readonly _tag: "NothingDue" }
  | { readonly _tag: "Capped"; readonly running: number }

/** What an attempt's outcome writes (fenced on its claim token). */
export type Outcome =
  | { readonly _tag: "Complete" }
  | { readonly _tag: "Retry"; readonly runAt: number; readonly error: string }
  | { readonly _tag: "Kill"; readonly error: string }

/** What ends an attempt. */
export interface FinishInput {
  readonly id: string
  readonly token: string
  readonly now: number
  readonly outcome: Outcome
  /** The lease the attempt holds, to release (and hand off) with the outcome. */
  readonly lease?: string | undefined
  /**
   * False: the release wakes no job waiting on the lease, because an attempt of the same worker
   * takes it next (src/runtime/worker/keyGate.ts). Default true. A release that follows a
   * `transferTo.unlessWaiting` that could not pass the lease on hands off whatever this says
   * (src/core/transitions.ts `finishHandsOff`).
   */
  readonly handOff?: boolean | undefined
  /**
   * With `lease`: the lease is not released but passed straight to another attempt of the same
   * worker, owner-fenced on this attempt's token, with a fresh fencing token, so that attempt
   * starts without taking the lease itself (src/runtime/worker/keyGate.ts). Wakes no waiter.
   */
  readonly transferTo?: LeaseTransfer | undefined
}

/** Who a finishing attempt's lease passes to (`FinishInput.transferTo`). */
export interface LeaseTransfer {
  /** The claim token of the attempt taking the lease over (its owner from then on). */
  readonly owner: string
  readonly host: string
  readonly expiresAt: number
  /**
   * Pass it on only while no other job waits on the lease in the database asleep (pending with
   * `lease_name`, not yet due); else release it and hand off as without `transferTo` (the waiter
   * there is woken, and the attempt here takes the lease as usual).
   */
  readonly unlessWaiting?: boolean | undefined
}

/**
 * What `finish` did. `written` false: fenced (the claim was reaped and re-claimed). `lease`:
 * `released`, `lost` (not ours any more: taken over after it expired), `unknown` (the release
 * failed, or a retry after a lost connection cannot tell), or `none` (no lease).
 */
export interface Finished {
  readonly written: boolean
  /** "released" also when the lease was passed on (`transferred`). */
  readonly lease: "none" | "released" | "lost" | "unknown"
  /** The lease's new fencing token, when it was passed to `FinishInput.transferTo`. */
  readonly transferred?: bigint | undefined
}

/** An attempt's claim: its job and claim token (which also owns the attempt's lease). */
export interface Claim {
  readonly id: string
  readonly token: string
}

/**
 * What a hand-back did: attempts given back (pending again, attempt returned), leases their
 * tokens owned that were released, and waiters on those leases made due.
 */
export interface HandedBack {
  readonly handedBack: number
  readonly released: number
  readonly woke: number
}

/**
 * Which jobs to cancel: one by `id`, or every unfinished job matching all the given fields.
 * `status` narrows to pending or processing jobs only.
 */
export interface CancelFilter {
  readonly id?: string | undefined
  readonly name?: string | undefined
  readonly queue?: string | undefined
  readonly status?: "pending" | "processing" | undefined
}

/**
 * Whether a claim still stands: `ours` (processing under that token), `cancelled` (its job was
 * cancelled while it was claimed: the row is cancelled and keeps that token), or `lost` (reaped
 * and re-claimed, or gone).
 */
export type ClaimState = "ours" | "cancelled" | "lost"

/** One row of the hosts table. */
export interface HostRow {
  readonly host: string
  readonly lastSeenAt: number
  readonly startedAt: number
  readonly running: number
  readonly maxConcurrent: number
  readonly draining: boolean
  readonly drainExpiresAt: number | null
  readonly codeVersion: string | null
}

/** Counts of jobs per queue and status. */
export interface JobCount {
  readonly queue: string
  readonly status: JobStatus
  readonly count: number
}

/** The jobs of one queue that are due and waiting (pending, `run_at` passed): how many, and the longest-waiting one's `run_at`. */
export interface QueueDepth {
  readonly queue: string
  readonly due: number
  /** Epoch ms: the earliest `run_at` among them. */
  readonly oldestRunAt: number
}

/** The statuses of a dead job: retries used up, or reaped and not idempotent. */
export type DeadStatus = "failed" | "interrupted"

/**
 * The statuses a retry or discard by filter can take: dead, or cancelled (a job cancelled by
 * mistake can be run again). All three keep their end time in `failed_at`.
 */
export type EndedStatus = DeadStatus | "cancelled"

/**
 * Which dead (or cancelled) jobs a retry or discard by filter takes: every one that matches all
 * the fields given, ended at or before `diedBefore` (its `failed_at`).
 */
export interface DeadJobFilter {
  readonly ids?: ReadonlyArray<string> | undefined
  readonly name?: string | undefined
  readonly queue?: string | undefined
  readonly statuses: ReadonlyArray<EndedStatus>
  readonly diedBefore: number
}

/** Filter for listing jobs. */
export interface JobFilter {
  readonly status?: JobStatus | undefined
  readonly queue?: string | undefined
  readonly name?: string | undefined
  readonly limit: number
}
